"""Edit nccl-tests output text for tests (derived runs made on the fly from real captures)."""
import re


def scaled(text, factor, min_bytes=0):
    """The same run with every algbw/busbw multiplied and every time divided by ``factor`` (in the rows
    of ``min_bytes`` and up; the trailer's average is scaled only when every row is)."""
    out = []
    for line in text.splitlines():
        fields = line.split()
        if fields and fields[0].isdigit() and len(fields) >= 9 and int(fields[0]) >= min_bytes:
            parsed = re.findall(r'\S+', line)
            # size count type redop root | time algbw busbw #wrong | time algbw busbw #wrong
            numbers = parsed[-8:]
            new = []
            for i, value in enumerate(numbers):
                kind = i % 4
                if kind == 0:
                    new.append('%.2f' % (float(value) / factor))
                elif kind in (1, 2):
                    new.append('%.2f' % (float(value) * factor))
                else:
                    new.append(value)
            line = ' '.join(parsed[:-8] + new)
        elif line.startswith('# Avg bus bandwidth') and not min_bytes:
            value = float(line.split(':')[1])
            line = '# Avg bus bandwidth    : %.4f' % (value * factor)
        out.append(line)
    return '\n'.join(out) + '\n'
