"""The commands that installing the package puts on the PATH (pyproject.toml's ``[project.scripts]``): ``xuanwu``
and ``xuanwu-run-diff``.

``xuanwu`` needs the collection xuanwu.cluster (its redaction and its playbooks, ``xuanwu.collection``): where none
is found it says in one line where it looked and what to set, exit 4 (nothing ran), no traceback.
``xuanwu-run-diff`` (``xuanwu.rundiff``, standard library only) needs nothing else; scripts/xuanwu-run-diff of a
checkout runs the same function.
"""
from __future__ import annotations

import sys

EXIT_BAD_INPUT = 4    # xuanwu.cli's: nothing ran


def xuanwu() -> int:
    from .collection import CollectionNotFound
    try:
        from .cli import main
    except CollectionNotFound as exc:
        print('xuanwu: %s' % exc, file=sys.stderr)
        return EXIT_BAD_INPUT
    return main()


def run_diff() -> int:
    from .rundiff import main
    try:
        return main(sys.argv[1:], sys.stdout, sys.stderr)
    except KeyboardInterrupt:
        return 130
