"""The `kubeberth` console script.

`kubeberth run` starts with the cyclic garbage collector off: the imports and the initial lists
allocate objects that live as long as the process, and the collections they set off find nothing
to free. The operator turns it back on, with what exists by then frozen, once the cache has
synced (`operator/collector.py`). It also loads kubernetes_asyncio by the piece
(`lazy_client.py`). `kubeberth --version` answers before anything else is loaded (version.py).
Every other command runs as usual.
"""

from __future__ import annotations

import sys


def main() -> int:
    if sys.argv[1:] == ["--version"]:
        from .pipes import guard_stdout
        from .version import version_text

        return guard_stdout(lambda: print(version_text()) or 0)
    if sys.argv[1:2] == ["run"]:
        from . import lazy_client
        from .operator import collector

        collector.pause_for_start_up()
        lazy_client.install()  # kubernetes_asyncio by the piece (lazy_client.py)
    from .cli import main as cli_main

    return cli_main()


if __name__ == "__main__":
    sys.exit(main())
