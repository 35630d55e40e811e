"""Command on the catalogue of public instance types: lots."""

from __future__ import annotations

from typing import Annotated

import typer

from topomap.cli.wiring import JsonOpt, _console, _guard, _print_json, app


@app.command()
@_guard
def lots(
    type_: Annotated[
        str | None,
        typer.Argument(
            metavar="TYPE", help="An entry (aws/p4de.24xlarge): every fact with its page.", show_default=False
        ),
    ] = None,
    json_out: JsonOpt = False,
) -> None:
    """List the catalogue of public instance types and their sources.

    `type: aws/p4de.24xlarge` in a declared lot, or `--lot-type aws/p4de.24xlarge` beside a paste, uses an
    entry; every fact it gives is labelled `catalogue` wherever it is used. A fact no public page was
    found for is not in the catalogue (unknown)."""
    # imported here, not at the top: `topomap --help` stays fast
    from topomap.model.lots import catalogue, entry
    from topomap.render.lot_view import catalogue_rows, catalogue_table, entry_text

    entries = list(catalogue()) if type_ is None else [entry(type_, "topomap lots")]
    if json_out:
        _print_json(catalogue_rows(entries))
        return
    # piped: every name and number whole; on a terminal a table too wide for it becomes blocks
    _console().print(catalogue_table(entries) if type_ is None else entry_text(entries[0]))
