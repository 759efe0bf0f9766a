"""Writes line-table test vectors for the running interpreter (2.7 or 3.x) to stdout.

Each line: <format> <first_line> <table hex> <offset>=<line>,...  with line -1 for "no line".
Offsets are bytes up to 3.10 and code units from 3.11, as spyglass's decoder takes them.
Run by hand with each interpreter and commit the output as line_tables_<version>.txt.
"""
import sys

SOURCE = '''
def f(a, b):
    x = a + b
    for i in range(10):
        if i % 2:
            x += i
        else:
            x -= i
    while x > 100:
        x //= 2
    try:
        y = 1 / a
    except ZeroDivisionError:
        y = 0
    finally:
        x += 1
''' + "\n" * 300 + '''
    z = [q * 2 for q in range(3)]
    return (x +
            y +
            len(z))
'''


def codes(code):
    yield code
    for const in code.co_consts:
        if hasattr(const, "co_code"):
            for inner in codes(const):
                yield inner


def main():
    module = compile(SOURCE, "<vectors>", "exec")
    out = []
    for code in codes(module):
        if sys.version_info >= (3, 11):
            fmt, table = "location", code.co_linetable
            pairs = [(i, -1 if p[0] is None else p[0]) for i, p in enumerate(code.co_positions())]
        elif sys.version_info >= (3, 10):
            fmt, table = "linetable310", code.co_linetable
            pairs = []
            for start, end, line in code.co_lines():
                for off in range(start, end, 2):
                    pairs.append((off, -1 if line is None else line))
        else:
            import dis
            fmt = "lnotab_signed" if sys.version_info >= (3, 6) else "lnotab_unsigned"
            table = code.co_lnotab
            starts = list(dis.findlinestarts(code))
            pairs = []
            step = 1 if sys.version_info < (3, 6) else 2
            for off in range(0, len(code.co_code), step):
                line = code.co_firstlineno
                for s, l in starts:
                    if s <= off:
                        line = l
                pairs.append((off, line))
        hexed = "".join("%02x" % (c if isinstance(c, int) else ord(c)) for c in table)
        out.append("%s %d %s %s" % (fmt, code.co_firstlineno, hexed or "-",
                                    ",".join("%d=%d" % p for p in pairs)))
    sys.stdout.write("\n".join(out) + "\n")


main()
