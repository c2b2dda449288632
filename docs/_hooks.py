"""MkDocs hook: render the Sphinx roles used in mpicoll's docstrings as plain code.

The docstrings say ``:class:`Work``` or ``:func:`mpicoll.all_to_all```; mkdocstrings
renders the backquoted part as code and leaves the role name in front of it. Drop it.
"""

from __future__ import annotations

import re

_ROLE = re.compile(r":(?:class|func|meth|mod|attr|exc|data|obj):(?=<code>)")


def on_page_content(html: str, **kwargs: object) -> str:
    return _ROLE.sub("", html)
