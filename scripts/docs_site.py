"""mkdocs hooks (``mkdocs.yml``): the README is the site's home page.

The README lives at the repository's root, where GitHub shows it, and links into ``docs/``; the
site is built from ``docs/``.  The README joins it as ``index.md``, its ``docs/`` links made
relative to the site, and the pages' links to ``../README.md`` lead to it.
"""

from __future__ import annotations

from pathlib import Path

from mkdocs.structure.files import File, Files


def on_files(files: Files, config) -> Files:
    readme = Path(config.config_file_path).parent / "README.md"
    files.append(File.generated(config, "index.md", content=readme.read_text().replace("](docs/", "](")))
    return files


def on_page_markdown(markdown: str, page, config, files: Files) -> str:
    return markdown.replace("](../README.md", "](index.md")
