"""The two ways tools/sweep refuses its input; both end with exit status 2."""


class SpecError(Exception):
    """A bad spec line, override or file: the message names where it is."""

    def __init__(self, where, message):
        super().__init__(f"{where}: {message}")


class UsageError(Exception):
    """A bad command line."""

    def __str__(self):
        return f"{self.args[0]} (see --help)"
