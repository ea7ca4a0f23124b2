"""The LABEL=GLOB arguments the A/B table tools share: each label with the
files its glob matches, in order; exits with the tool's usage when an
argument is malformed or a glob matches nothing."""
import glob
import sys


def labelled_files(args, usage):
    if not args or any("=" not in a for a in args):
        sys.exit(usage)
    out = []
    for label, pattern in (a.split("=", 1) for a in args):
        files = sorted(glob.glob(pattern))
        if not files:
            sys.exit(f"{label}: no file matches {pattern}")
        out.append((label, files))
    return out
