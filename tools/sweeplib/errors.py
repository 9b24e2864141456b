"""The two ways tools/sweep refuses its input; both end with exit status 2."""


def printable(text):
    """text with its control characters (C0, DEL, C1) and undecodable bytes
    (read as surrogates) as \\xNN escapes: a spec line or a file name echoed
    in a message cannot move the cursor, retitle the terminal or hide the
    message."""
    out = []
    for ch in text:
        code = ord(ch)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that was not UTF-8
            out.append("\\x%02x" % (code - 0xDC00))
        elif code < 0x20 or 0x7F <= code <= 0x9F:
            out.append("\\x%02x" % code)
        else:
            out.append(ch)
    return "".join(out)


class SpecError(Exception):
    """A bad spec line, override or file: the message names where it is."""

    def __init__(self, where, message):
        super().__init__(f"{where}: {message}")


class UsageError(Exception):
    """A bad command line."""

    def __str__(self):
        return f"{self.args[0]} (see --help)"
