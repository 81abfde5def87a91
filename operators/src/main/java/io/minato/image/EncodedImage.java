package io.minato.image;

/** An opened image: its file and its encoded bytes (JPEG, PNG, ...), not yet decoded. */
public record EncodedImage(ImageFile file, byte[] bytes) {}
