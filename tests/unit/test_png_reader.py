"""tests/png.py, the PNG reader of the browser test: images written here with every scanline filter read back
pixel for pixel; a cut-off or corrupted file is a ValueError."""
import struct
import zlib

import pytest

import png

# 5 x 4 RGB image: every pixel different enough that a wrong filter shows
PIXELS = [[((x * 53 + y * 17) % 256, (x * 7 + y * 91) % 256, (x * y * 29 + 3) % 256) for x in range(5)] for y in range(4)]


def _chunk(kind, body):
    return struct.pack('>I', len(body)) + kind + body + struct.pack('>I', zlib.crc32(kind + body) & 0xffffffff)


def _paeth(a, b, c):
    p = a + b - c
    pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
    return a if pa <= pb and pa <= pc else (b if pb <= pc else c)


def _filtered(kind, line, prev, bpp=3):
    out = bytearray()
    for i, value in enumerate(line):
        left = line[i - bpp] if i >= bpp else 0
        up = prev[i]
        upleft = prev[i - bpp] if i >= bpp else 0
        predictor = {0: 0, 1: left, 2: up, 3: (left + up) // 2, 4: _paeth(left, up, upleft)}[kind]
        out.append((value - predictor) & 0xff)
    return bytes([kind]) + bytes(out)


def _png(filters):
    raw, prev = b'', bytes(15)
    for y, row in enumerate(PIXELS):
        line = bytes(v for pixel in row for v in pixel)
        raw += _filtered(filters[y % len(filters)], line, prev)
        prev = line
    return (png.SIGNATURE + _chunk(b'IHDR', struct.pack('>IIBBBBB', 5, 4, 8, 2, 0, 0, 0))
            + _chunk(b'IDAT', zlib.compress(raw)) + _chunk(b'IEND', b''))


@pytest.mark.parametrize('filters', [(0,), (1,), (2,), (3,), (4,), (0, 1, 2, 3, 4)])
def test_every_filter_reads_back_the_pixels(filters):
    data = _png(filters)
    assert png.header(data) == (5, 4, 8, 2, 0)
    _w, _h, bpp, lines = png.rows(data)
    assert [[tuple(line[i:i + 3]) for i in range(0, 15, bpp)] for line in lines] == PIXELS
    counts = png.colour_counts(data)
    assert sum(counts.values()) == 20 and set(counts) == set(p for row in PIXELS for p in row)


def test_bad_files_are_value_errors():
    data = _png((4,))
    for bad in (b'GIF89a', data[:40], data[:20] + bytes([data[20] ^ 0xff]) + data[21:]):
        with pytest.raises(ValueError):
            png.colour_counts(bad)
