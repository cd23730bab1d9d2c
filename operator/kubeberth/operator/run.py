"""`kubeberth run`: the operator's command and its entry coroutine.

`run_main(args)` (args parsed with `options.add_run_arguments`) runs the operator until it is
stopped (SIGINT/SIGTERM) and returns the exit code. `run_operator(config)` is the same thing as a
coroutine, used by the integration tests to run the real operator in-process against an emulated
API server.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from .options import BadConfigFile, ConnectionConfigError, OperatorConfig, add_run_arguments, config_from_args
from .serving_options import ServingOptionsError

if TYPE_CHECKING:
    from .explain_publisher import SuggesterFactory


def configure_logging(config: OperatorConfig) -> None:
    import kopf

    formats = {"plain": kopf.LogFormat.PLAIN, "full": kopf.LogFormat.FULL, "json": kopf.LogFormat.JSON}
    kopf.configure(debug=config.debug, verbose=config.verbose, log_format=formats[config.log_format])
    if not (config.debug or config.verbose):
        logging.getLogger("aiohttp.access").setLevel(logging.WARNING)
        # kopf reports every handled watch event per object at INFO: thousands of lines per minute here.
        logging.getLogger("kopf.objects").setLevel(logging.WARNING)
        # One line per scheduling decision (scheduler/decision_log.py): only with --verbose.
        logging.getLogger("kubeberth.decisions").setLevel(logging.WARNING)


async def run_operator(config: OperatorConfig, *, stop_flag: asyncio.Event | None = None,
                       ready_flag: asyncio.Event | None = None,
                       suggester_factory: SuggesterFactory | None = None) -> int:
    """Run the operator until `stop_flag` is set or it is signalled. Returns the exit code.
    `suggester_factory`: the suggestions of pods annotated kubeberth.io/suggest (none: none)."""
    from .app import OperatorApp

    app = OperatorApp(config, suggester_factory)
    return await app.run(stop_flag=stop_flag, ready_flag=ready_flag)


def run_main(args: argparse.Namespace, suggester_factory: SuggesterFactory | None = None) -> int:
    try:
        config = config_from_args(args)
    except BadConfigFile as exc:
        print(f"kubeberth run: --config: {exc}", file=sys.stderr)
        return 2
    except ServingOptionsError as exc:
        print(f"kubeberth run: {exc}", file=sys.stderr)
        return 2
    configure_logging(config)
    try:
        return asyncio.run(run_operator(config, suggester_factory=suggester_factory))
    except ConnectionConfigError as exc:
        print(f"kubeberth run: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="kubeberth run", description="Run the kubeberth scheduler operator.")
    add_run_arguments(parser)
    return run_main(parser.parse_args(argv))


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
