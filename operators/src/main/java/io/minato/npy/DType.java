package io.minato.npy;

/** The NumPy element types a {@code .npy} file may hold here, with their type code and size. */
public enum DType {
    BOOL("b1", 1),
    INT8("i1", 1),
    UINT8("u1", 1),
    INT16("i2", 2),
    UINT16("u2", 2),
    INT32("i4", 4),
    UINT32("u4", 4),
    INT64("i8", 8),
    UINT64("u8", 8),
    FLOAT16("f2", 2),
    FLOAT32("f4", 4),
    FLOAT64("f8", 8);

    private final String code;
    private final int size;

    DType(String code, int size) {
        this.code = code;
        this.size = size;
    }

    /** Bytes per element. */
    public int size() {
        return size;
    }

    /** The NumPy type code without byte order, e.g. {@code "f4"}. */
    public String code() {
        return code;
    }

    /** The type with this code, or null when it is not one we support. */
    static DType byCode(String code) {
        for (DType t : values()) {
            if (t.code.equals(code)) {
                return t;
            }
        }
        return null;
    }

    /** All codes, for error messages that say what would have been accepted. */
    static String supportedCodes() {
        StringBuilder sb = new StringBuilder();
        for (DType t : values()) {
            sb.append(sb.length() == 0 ? "" : ", ").append(t.code);
        }
        return sb.toString();
    }
}
