"""A small PNG reader for the tests (the standard library has none): size and pixels of a non-interlaced 8-bit
greyscale, RGB or RGBA image, as browsers write screenshots. Raises ValueError on anything else."""
import struct
import zlib

SIGNATURE = b'\x89PNG\r\n\x1a\n'
CHANNELS = {0: 1, 2: 3, 4: 2, 6: 4}   # colour type -> bytes per pixel at bit depth 8


def chunks(data):
    if not data.startswith(SIGNATURE):
        raise ValueError('not a PNG: the file does not start with the PNG signature')
    pos = len(SIGNATURE)
    while pos + 8 <= len(data):
        length, kind = struct.unpack('>I4s', data[pos:pos + 8])
        if pos + 12 + length > len(data):
            raise ValueError('PNG chunk %r cut off' % kind)
        body = data[pos + 8:pos + 8 + length]
        crc = struct.unpack('>I', data[pos + 8 + length:pos + 12 + length])[0]
        if zlib.crc32(kind + body) & 0xffffffff != crc:
            raise ValueError('PNG chunk %r: CRC mismatch' % kind)
        yield kind, body
        pos += 12 + length
        if kind == b'IEND':
            return
    raise ValueError('PNG without IEND: the file is cut off')


def header(data):
    """``(width, height, bit depth, colour type, interlace)`` of the IHDR chunk."""
    for kind, body in chunks(data):
        if kind == b'IHDR':
            width, height, depth, colour, _compression, _filter, interlace = struct.unpack('>IIBBBBB', body)
            return width, height, depth, colour, interlace
        raise ValueError('PNG whose first chunk is %r, not IHDR' % kind)
    raise ValueError('PNG without chunks')


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    if pa <= pb and pa <= pc:
        return a
    return b if pb <= pc else c


def rows(data):
    """``(width, height, bytes per pixel, [row bytes])``: the unfiltered scanlines."""
    width, height, depth, colour, interlace = header(data)
    if depth != 8 or colour not in CHANNELS or interlace:
        raise ValueError('PNG of bit depth %d, colour type %d, interlace %d: not read here' % (depth, colour, interlace))
    bpp = CHANNELS[colour]
    raw = zlib.decompress(b''.join(body for kind, body in chunks(data) if kind == b'IDAT'))
    stride = width * bpp
    if len(raw) != height * (stride + 1):
        raise ValueError('PNG image data of %d bytes, expected %d' % (len(raw), height * (stride + 1)))
    out, prev = [], bytearray(stride)
    for y in range(height):
        kind = raw[y * (stride + 1)]
        line = bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 0xff
        elif kind == 2:
            line = bytearray((a + b) & 0xff for a, b in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 0xff
        elif kind == 4:
            for i in range(stride):
                left, upleft = (line[i - bpp], prev[i - bpp]) if i >= bpp else (0, 0)
                line[i] = (line[i] + _paeth(left, prev[i], upleft)) & 0xff
        elif kind != 0:
            raise ValueError('PNG scanline %d with filter type %d' % (y, kind))
        out.append(bytes(line))
        prev = line
    return width, height, bpp, out


def colour_counts(data):
    """``{(r, g, b): pixels}`` of the image (alpha left out; greyscale as three equal values)."""
    _width, _height, bpp, lines = rows(data)
    counts = {}
    for line in lines:
        for i in range(0, len(line), bpp):
            pixel = tuple(line[i:i + 3]) if bpp >= 3 else (line[i],) * 3
            counts[pixel] = counts.get(pixel, 0) + 1
    return counts
