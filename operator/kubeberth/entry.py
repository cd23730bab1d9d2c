"""The `kubeberth` console script.

`kubeberth run` starts with the cyclic garbage collector off: the imports and the initial lists
allocate objects that live as long as the process, and the collections they set off find nothing
to free. The operator turns it back on, with what exists by then frozen, once the cache has
synced (`operator/collector.py`). Every other command runs with the collector as usual.
"""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:2] == ["run"]:
        from .operator import collector

        collector.pause_for_start_up()
    from .cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
