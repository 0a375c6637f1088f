"""Strict documentation checks for ppdinfer, as warnings (``sphinx-build -W`` makes them errors).

1. Every public name of the modules in ``ppd_public_modules`` (its ``__all__``, or else every
   name without a leading underscore defined in the module) has a docstring with a NumPy-style
   ``Examples`` section holding a doctest (``>>>``); every public method and property of a
   public class has a docstring (its own or one it inherits from a ppdinfer base class). A
   method that another library calls and documents (a base class's method from outside
   ppdinfer, or one named in ``ppd_foreign_members``, such as PyMC's ``logp``) is exempt.
2. Every public function and class appears in the API reference (the Python domain).
3. ``ppd_docstring_allowlist`` lists the functions and classes exempt from the example and the
   methods exempt from the docstring of (1); an entry that is no public name, or whose
   docstring is now complete, is itself reported, so the list can only shrink.
4. No docstring of a public module, function, class, method or property holds an ASCII control
   character other than tab, newline and carriage return (a ``\\a`` or ``\\b`` in a non-raw
   docstring meant as LaTeX's ``\\alpha`` or ``\\beta`` becomes BEL or backspace).

Docstrings are read as plain text first (``help()``), so ``|`` in them is mathematics (absolute
values, norms, "given"), never an rST substitution or line block: `escape_bars` escapes it outside
inline literals and roles, literal blocks, directives and doctests.
"""

from __future__ import annotations

import importlib
import inspect
import re

from sphinx.util import logging

logger = logging.getLogger(__name__)

_EXAMPLES = re.compile(r"^\s*Examples\n\s*-{8,}\n(?:.*\n)*?\s*>>> ", re.MULTILINE)


def public_names(module) -> list[str]:
    """``__all__``, or the names without a leading underscore that the module itself defines."""
    names = getattr(module, "__all__", None)
    if names is not None:
        return list(names)
    return [
        name
        for name, value in vars(module).items()
        if not name.startswith("_") and getattr(value, "__module__", None) == module.__name__
    ]


def public_objects(module_names) -> dict[str, object]:
    """Every public function and class, under its first public name (module order)."""
    seen, found = set(), {}
    for module_name in module_names:
        module = importlib.import_module(module_name)
        for name in public_names(module):
            value = getattr(module, name)
            if not (inspect.isclass(value) or inspect.isroutine(value)) or id(value) in seen:
                continue
            seen.add(id(value))
            found[f"{module_name}.{name}"] = value
    return found


def _own_members(cls, foreign_names) -> dict[str, object]:
    """Public methods and properties that ``cls`` defines, less those of other libraries' interfaces."""
    foreign = [base for base in cls.__mro__[1:-1] if not base.__module__.startswith("ppdinfer")]
    members = {}
    for name, value in vars(cls).items():
        if name.startswith("_") or foreign and (name in foreign_names or any(hasattr(b, name) for b in foreign)):
            continue
        if isinstance(value, (classmethod, staticmethod)):
            value = value.__func__
        if isinstance(value, property) or inspect.isroutine(value):
            members[name] = value
    return members


def _inherited_doc(cls, name) -> str | None:
    """The docstring of ``cls.name``, or of the same member of the nearest base class that has one."""
    for base in cls.__mro__:
        if name in vars(base):
            value = vars(base)[name]
            doc = getattr(value, "__func__", value).__doc__
            if doc:
                return doc
    return None


_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")


def control_characters(doc: str | None) -> list[str]:
    """The control characters of ``doc`` other than tab, newline and carriage return, as line:repr."""
    found = []
    for number, line in enumerate((doc or "").split("\n"), 1):
        found += [f"line {number}: {char!r}" for char in _CONTROL.findall(line)]
    return found


def check_control_characters(app) -> None:
    """Point (4) of the module docstring."""
    for module_name in app.config.ppd_public_modules:
        module = importlib.import_module(module_name)
        docs = {module_name: module.__doc__}
        for name, value in public_objects([module_name]).items():
            docs[name] = value.__doc__
            if inspect.isclass(value):
                for member, attribute in vars(value).items():
                    if not member.startswith("_") or member == "__init__":
                        docs[f"{name}.{member}"] = getattr(getattr(attribute, "__func__", attribute), "__doc__", None)
        for name, doc in docs.items():
            found = control_characters(doc if isinstance(doc, str) else None)
            if found:
                logger.warning(f"{name}: control characters in the docstring ({', '.join(found)}); use a raw string")


def check_docstrings(app) -> None:
    """Point (1) and (3) of the module docstring."""
    check_control_characters(app)
    allowed = set(app.config.ppd_docstring_allowlist)
    objects = public_objects(app.config.ppd_public_modules)
    checked = set()
    for name, value in objects.items():
        checked.add(name)
        doc = inspect.cleandoc(value.__doc__ or "")
        if not doc:
            logger.warning(f"{name} has no docstring")
        elif not _EXAMPLES.search(doc + "\n"):
            if name not in allowed:
                logger.warning(f"{name}: the docstring has no Examples section with a doctest")
        elif name in allowed:
            logger.warning(f"{name} has an example now: remove it from ppd_docstring_allowlist (docs/conf.py)")
        if inspect.isclass(value):
            for member in _own_members(value, app.config.ppd_foreign_members):
                checked.add(f"{name}.{member}")
                if not _inherited_doc(value, member):
                    if f"{name}.{member}" not in allowed:
                        logger.warning(f"{name}.{member} has no docstring")
                elif f"{name}.{member}" in allowed:
                    logger.warning(f"{name}.{member} has a docstring now: remove it from ppd_docstring_allowlist")
    for name in sorted(allowed - checked):
        logger.warning(f"ppd_docstring_allowlist lists {name}, which is no public name: remove it")


def check_reference(app, env) -> None:
    """Point (2) of the module docstring."""
    documented = set(env.get_domain("py").objects)
    for name in public_objects(app.config.ppd_public_modules):
        if name not in documented:
            logger.warning(f"{name} is missing from the API reference (docs/api/)")


_INLINE_LITERAL = re.compile(r"(``.+?``|:[\w:.-]+:`[^`]*`)")
_BAR = re.compile(r"(?<!\\)\|")


def escape_bars(app, what, name, obj, options, lines) -> None:
    """Escape ``|`` in docstring text, leaving literal text, math and doctests alone."""
    verbatim = None  # indentation of the line that opened a literal block or a directive
    doctest = False
    for i, line in enumerate(lines):
        text = line.lstrip()
        indent = len(line) - len(text)
        if verbatim is not None and (not text or indent > verbatim):
            continue
        directive = text.startswith(".. ")
        verbatim = indent if directive or text.endswith("::") else None
        doctest = bool(text) and (doctest or text.startswith(">>>"))
        if directive or doctest or "|" not in line:
            continue
        parts = _INLINE_LITERAL.split(line)  # text, literal, text, ...
        lines[i] = "".join(part if k % 2 else _BAR.sub(r"\\|", part) for k, part in enumerate(parts))


def setup(app):
    app.add_config_value("ppd_public_modules", [], "env")
    app.add_config_value("ppd_docstring_allowlist", set(), "env")
    app.add_config_value("ppd_foreign_members", set(), "env")
    app.connect("autodoc-process-docstring", escape_bars)
    app.connect("builder-inited", check_docstrings)
    app.connect("env-check-consistency", check_reference)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
