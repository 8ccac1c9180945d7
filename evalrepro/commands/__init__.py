"""The subcommands of the ``evalrepro`` command line, one module each.

A command module has ``add_parser(subparsers)``, which declares the command and its
arguments (the shared ones come from :mod:`evalrepro.commands._arguments`) and returns
its parser, and ``main(args) -> int``, which calls the library, prints, and returns the
exit code. :mod:`evalrepro.cli` wires them together. A command imports what is heavy
(statistics, Hydra, the pipeline) inside ``main``: ``evalrepro --help`` loads neither.
"""
