"""A C API reference generated from the comments of a C header (pyroi.h).

The header's own layout is the input: its opening comment introduces the page, each banner
comment (a block whose first line is a run of dashes) opens a section, and every declaration
(``#define``, ``typedef``, a ``PYROI_API`` function) is documented by the comment right above
it. Consecutive declarations under one comment (the f32/f64 pairs) form one entry.

``parse_header`` is plain Python (the tests use it to check that every public function is
documented); ``setup`` registers the Sphinx directive::

    ```{c-header} ../src/c/include/pyroi.h
    ```
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

_BANNER = re.compile(r"^\s*-{10,}\s*$")
_NAME = re.compile(
    r"#define\s+(?P<macro>\w+)"
    r"|\}\s*(?P<typedef>\w+)\s*;"
    r"|\b(?P<function>pyroi_\w+)\s*\("
)


@dataclasses.dataclass
class Entry:
    names: list[str]
    comment: str
    code: str


@dataclasses.dataclass
class Section:
    title: str
    intro: str
    entries: list[Entry] = dataclasses.field(default_factory=list)


def _comment_text(block: str) -> str:
    """The text of a /* ... */ block without its delimiters and leading asterisks."""
    lines = block.strip()[2:-2].splitlines()
    text = []
    for line in lines:
        line = re.sub(r"^\s*\* ?", "", line) if line.lstrip().startswith("*") else line.strip()
        text.append(line.rstrip())
    while text and not text[0].strip():
        text.pop(0)
    while text and not text[-1].strip():
        text.pop()
    return "\n".join(text)


def _declaration_names(code: str) -> list[str]:
    names = []
    for match in _NAME.finditer(code):
        name = match.group("macro") or match.group("typedef") or match.group("function")
        if name not in names:
            names.append(name)
    return names


def _tokens(text: str):
    """('comment', text) and ('code', declaration) pieces of the header, in order. Only the
    top level of the include guard counts: the lines inside nested #if blocks (extern "C",
    the PYROI_API definition) are scaffolding, not API."""
    depth = 0        # #if nesting, the include guard included
    comment = None   # lines of a /* ... */ block being read
    code: list[str] = []
    continued = False
    for line in text.splitlines():
        stripped = line.strip()
        if comment is not None:
            comment.append(line)
            if "*/" in stripped:
                yield "comment", "\n".join(comment)
                comment = None
            continue
        if continued:
            code.append(line)
            continued = stripped.endswith("\\")
            if not continued:
                yield "code", "\n".join(code)
                code = []
            continue
        if stripped.startswith("#"):
            directive = stripped[1:].split()[0] if stripped[1:].split() else ""
            if directive in ("if", "ifdef", "ifndef"):
                depth += 1
            elif directive == "endif":
                depth -= 1
            elif directive == "define" and depth == 1 and not stripped.endswith("PYROI_H"):
                code = [line]
                continued = stripped.endswith("\\")
                if not continued:
                    yield "code", line
                    code = []
            continue
        if depth > 1:
            continue
        if stripped.startswith("/*") and not code:
            if "*/" in stripped:
                yield "comment", stripped
            else:
                comment = [line]
            continue
        if not stripped and not code:
            yield "blank", ""
            continue
        if stripped in ('extern "C" {', "}"):
            continue
        code.append(line)
        bare = re.sub(r"/\*.*?(\*/|$)", "", "\n".join(code), flags=re.S)  # comments aside
        nesting = bare.count("{") + bare.count("(") - bare.count("}") - bare.count(")")
        if nesting == 0 and bare.rstrip().endswith(";"):
            yield "code", "\n".join(code)
            code = []


def _title(heading: str) -> str:
    """A banner's first paragraph as a section title: when long, up to its first comma, colon
    or full stop outside brackets ("RoIPool (quantised max pooling), as torchvision..." ->
    "RoIPool (quantised max pooling)"), and without a long parenthesis."""
    heading = heading.rstrip(".")
    depth = 0
    for i, char in enumerate(heading):
        depth += (char in "([") - (char in ")]")
        if len(heading) > 60 and depth == 0 and char in ",:;." and heading[i + 1:i + 2] == " ":
            heading = heading[:i]
            break
    if len(heading) > 60 and heading.endswith(")") and " (" in heading:
        heading = heading[:heading.index(" (")]
    return heading


def parse_header(text: str) -> tuple[str, list[Section]]:
    """The header's opening comment and its sections of documented declarations."""
    tokens = list(_tokens(text))
    intro = _comment_text(tokens.pop(0)[1]) if tokens and tokens[0][0] == "comment" else ""
    sections = [Section("General", "")]
    comment = ""
    entry = None
    for kind, value in tokens:
        if kind == "blank":  # a blank line ends an entry
            entry = None
            continue
        if kind == "comment":
            body = _comment_text(value)
            lines = body.splitlines()
            if lines and _BANNER.match(lines[0]):
                lines = [line for line in lines if not _BANNER.match(line)]
                banner = "\n".join(lines).strip()
                heading = " ".join(banner.partition("\n\n")[0].split())
                title = _title(heading)
                # a shortened title keeps its whole sentence in the introduction
                intro_text = banner if title != heading.rstrip(".") else banner.partition(
                    "\n\n")[2]
                sections.append(Section(title, intro_text.strip()))
                comment = ""
            else:
                comment = body
            entry = None
            continue
        names = _declaration_names(value)
        if not names:
            continue
        code = re.sub(r"\bPYROI_API\s+", "", value)
        if entry is None:
            entry = Entry(names, comment, code)
            sections[-1].entries.append(entry)
            comment = ""
        else:
            entry.names += names
            entry.code += "\n" + code
    return intro, [section for section in sections if section.entries]


def _text_nodes(text: str):
    """Paragraphs for flowing text, literal blocks for indented runs (lists, tables)."""
    from docutils import nodes

    result = []
    for chunk in re.split(r"\n\s*\n", text):
        lines = chunk.splitlines()
        run: list[str] = []
        indented = None
        for line in lines + [None]:
            is_indented = line is not None and line.startswith(" ")
            if line is None or (run and is_indented != indented and not (
                    indented and line.startswith("  "))):
                if run:
                    body = "\n".join(run)
                    result.append(nodes.literal_block(body, body, language="text")
                                  if indented else nodes.paragraph(body, " ".join(run)))
                run = []
            if line is not None:
                if not run:
                    indented = is_indented
                run.append(line)
    return result


def setup(app):
    from docutils import nodes
    from docutils.parsers.rst import Directive

    class CHeader(Directive):
        required_arguments = 1
        has_content = False

        def run(self):
            env = self.state.document.settings.env
            path = Path(env.doc2path(env.docname)).parent / self.arguments[0]
            env.note_dependency(str(path.resolve()))
            intro, sections = parse_header(path.read_text(encoding="utf-8"))
            result = _text_nodes(intro)
            for section in sections:
                node = nodes.section(ids=[nodes.make_id("c-api-" + section.title)])
                node += nodes.title(section.title, section.title)
                node += _text_nodes(section.intro)
                for entry in section.entries:
                    target_ids = [nodes.make_id(name) for name in entry.names]
                    rubric = nodes.rubric("", "", ids=target_ids)
                    rubric += nodes.literal(" / ".join(entry.names), " / ".join(entry.names))
                    node += rubric
                    block = nodes.literal_block(entry.code, entry.code, language="c")
                    node += block
                    node += _text_nodes(entry.comment)
                result.append(node)
            return result

    app.add_directive("c-header", CHeader)
    return {"parallel_read_safe": True, "parallel_write_safe": True}
