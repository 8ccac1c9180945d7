"""``evalrepro config``: compose, validate and print the experiment config."""

from __future__ import annotations

import argparse
import json
import sys

from omegaconf import OmegaConf

from evalrepro.commands._arguments import config_arguments, json_argument
from evalrepro.config.experiment import compose
from evalrepro.errors import UserError


def add_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:
    config = subparsers.add_parser(
        "config", help="compose, validate and print the experiment config"
    )
    config_arguments(config)
    described = config.add_mutually_exclusive_group()
    json_argument(described, "the composed config as JSON")
    described.add_argument(
        "--schema", action="store_true", help="the JSON Schema of every config (no overrides)"
    )
    described.add_argument(
        "--reference", action="store_true", help="every config field, as Markdown"
    )
    return config


def main(args: argparse.Namespace) -> int:
    if args.schema or args.reference:
        from evalrepro.config.reference import json_schema, reference

        if args.overrides or args.config_dir:
            raise UserError("--schema and --reference describe every config: drop the overrides")
        sys.stdout.write(json.dumps(json_schema(), indent=2) + "\n" if args.schema else reference())
        return 0
    config = compose(args.overrides, args.config_dir)
    if args.json:
        print(json.dumps(config.model_dump(mode="json"), indent=2))
    else:
        # The validated config, printed as YAML in the shape the user wrote.
        print(OmegaConf.to_yaml(OmegaConf.create(config.model_dump(mode="json"))), end="")
    return 0
