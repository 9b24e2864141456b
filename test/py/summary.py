"""A unittest runner whose output ends with one plain line,
'NAME: N passed, N failed, N skipped', which any reader of test logs
understands (unittest's own 'Ran N tests ... OK' is not such a line)."""
import sys
import unittest


def run(label, suite):
    """Runs suite verbosely, then says the counts; exits 0 when nothing
    failed."""
    runner = unittest.TextTestRunner(verbosity=2, stream=sys.stdout)
    result = runner.run(suite)
    failed = len(result.failures) + len(result.errors)
    skipped = len(result.skipped)
    for _, reason in result.skipped[:1]:
        print("%s: SKIPPED: %s" % (label, reason))
    print("%s: %d passed, %d failed, %d skipped"
          % (label, result.testsRun - failed - skipped, failed, skipped))
    sys.exit(0 if result.wasSuccessful() else 1)


if __name__ == "__main__":
    # python3 summary.py DIR: every test_*.py under DIR.
    run("py", unittest.defaultTestLoader.discover(sys.argv[1]))
