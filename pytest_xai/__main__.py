"""``python -m pytest_xai``: merge the JSON reports of CI shards, render the HTML report.

Usage::

    python -m pytest_xai merge shard1.json shard2.json -o all.json [--html all.html] [--allow-mismatch]
    python -m pytest_xai html xai-report.json -o xai-report.html
"""

from __future__ import annotations

import argparse
import sys


def _read(path: str, command: str) -> dict:
    """The report at ``path``, validated (:func:`pytest_xai.reports.files.read_report`); a wrong file ends the
    command with one line naming the file and the field (exit 2)."""
    from pytest_xai.reports import files

    try:
        return files.read_report(path, f"pytest_xai {command}: {path}")
    except files.ReportError as exc:
        print(exc, file=sys.stderr)
        raise SystemExit(2) from None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m pytest_xai", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    merge = sub.add_parser("merge", help="merge the JSON reports of shards of one suite run into one")
    merge.add_argument("reports", nargs="+", metavar="REPORT.json")
    merge.add_argument("-o", "--output", required=True, metavar="ALL.json")
    merge.add_argument("--html", metavar="ALL.html", help="also render the merged report as HTML")
    merge.add_argument(
        "--allow-mismatch",
        action="store_true",
        help="merge reports with different seeds, versions or thresholds (recorded in the output)",
    )
    html = sub.add_parser("html", help="render a JSON report as a self-contained HTML file")
    html.add_argument("report", metavar="REPORT.json")
    html.add_argument("-o", "--output", required=True, metavar="REPORT.html")
    args = parser.parse_args(argv)

    from pytest_xai.reports import embed, htmlreport, report

    if args.command == "merge":
        from pytest_xai.reports import merge as merging

        try:
            doc = merging.merge(
                [(path, _read(path, "merge")) for path in args.reports], allow_mismatch=args.allow_mismatch
            )
        except merging.MergeError as exc:
            print(f"pytest_xai merge: {exc}", file=sys.stderr)
            return 2
        report.write_json(args.output, doc)
        print(f"merged {len(args.reports)} reports, {len(doc['results'])} results: {args.output}")
        for problem in doc.get("merge_mismatches", []):
            print(f"warning: {problem}", file=sys.stderr)
        target, pictures = args.html, {}
    else:
        doc, target = _read(args.report, "html"), args.output
        pictures = embed.collect(args.report, doc["results"])
    if target:
        htmlreport.write(target, doc, pictures)
        print(f"HTML report: {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
