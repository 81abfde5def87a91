package io.minato.data;

import java.io.DataInput;
import java.io.DataOutput;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.concurrent.TimeUnit;

/**
 * A file's identity as results remembered from it are keyed: its absolute path, size, modification
 * time and file key (the inode), so that a changed or replaced file is told apart.
 */
public record FileStamp(String path, long size, long modifiedNanos, String fileKey) {

    /** The file as it is now. */
    public static FileStamp of(Path file) throws IOException {
        Path p = file.toAbsolutePath().normalize();
        BasicFileAttributes a = Files.readAttributes(p, BasicFileAttributes.class);
        return new FileStamp(
                p.toString(),
                a.size(),
                a.lastModifiedTime().to(TimeUnit.NANOSECONDS),
                String.valueOf(a.fileKey()));
    }

    public void writeTo(DataOutput out) throws IOException {
        out.writeUTF(path);
        out.writeLong(size);
        out.writeLong(modifiedNanos);
        out.writeUTF(fileKey);
    }

    public static FileStamp readFrom(DataInput in) throws IOException {
        return new FileStamp(in.readUTF(), in.readLong(), in.readLong(), in.readUTF());
    }
}
