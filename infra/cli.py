"""How Vantage's command-line programs start and end: one mechanism for every ``python -m`` command.

* Settings are ``key=value`` in Hydra's override grammar. A command with a YAML config composes it
  (:func:`run_hydra`, also ``python -m eval <cmd>`` and ``python -m experiment <cmd>``); a command without one
  declares its options as a dataclass (:func:`run_options`).
* ``--help``/``-h`` prints the usage and every option with its default, help and allowed values (exit 0).
* Bad input ends with ``error: <what, where, which value>`` and exit 2 (an unknown key with "did you mean"),
  one line and exit 130 for Ctrl-C, never a traceback unless asked for (``--debug`` or
  ``HYDRA_FULL_ERROR=1``, for developers).
* The shared conventions: ``out=`` the output folder or file, ``progress=true|false`` progress bars,
  ``overwrite=`` where a command can replace finished work.

``run_hydra(config_name, job)`` composes ``configs/<config_name>.yaml`` with the command line's
overrides itself, so a mistyped key or value is an ``error:`` line too, and calls ``job(cfg_dict)``;
arguments meant for Hydra itself (``--help``, ``--cfg job``, ``--multirun`` …) go to ``hydra.main``.
"""
from __future__ import annotations

import logging
import os
import sys
from collections.abc import Callable

EXIT_USAGE = 2
EXIT_INTERRUPTED = 130
EXIT_INTERNAL = 1


def debug_requested(argv: list[str]) -> bool:
    return "--debug" in argv or os.environ.get("HYDRA_FULL_ERROR", "") == "1"


def _interrupted(e: BaseException) -> bool:
    """Ctrl-C, also when numba or a C extension turned it into a ``SystemError``."""
    seen = set()
    while e is not None and id(e) not in seen:
        if isinstance(e, KeyboardInterrupt):
            return True
        seen.add(id(e))
        e = e.__cause__ or e.__context__
    return False


def _one_line(e: BaseException) -> str:
    msg = str(e).strip() or type(e).__name__
    return " ".join(line.strip() for line in msg.splitlines() if line.strip())


def _composition_error(e: BaseException) -> str:
    """One line for a failed Hydra composition, with the reason OmegaConf gave (Hydra's own message says only
    which override failed, e.g. a value of the wrong type for a structured config's field)."""
    msg = _one_line(e)
    cause = str(e.__cause__ or "").strip()
    first = cause.splitlines()[0].strip() if cause else ""
    return f"{msg}: {first}" if first and first not in msg else msg


def run_guarded(job: Callable[[], object], debug: bool = False,
                user_errors: tuple[type[BaseException], ...] = (ValueError, OSError, RuntimeError)) -> int:
    """Run ``job()``; map what it raises to an exit status and one line on stderr. Returns 0 on success."""
    try:
        job()
        return 0
    except SystemExit:
        raise
    except BaseException as e:  # noqa: BLE001 - the CLI boundary: every failure becomes one line
        if debug:
            raise
        if _interrupted(e):
            print("interrupted (Ctrl-C); finished work is kept — run the same command again to resume",
                  file=sys.stderr)
            return EXIT_INTERRUPTED
        if isinstance(e, user_errors):
            print(f"error: {_one_line(e)}", file=sys.stderr)
            return EXIT_USAGE
        print(f"error: internal error ({type(e).__name__}: {_one_line(e)}); please report it with the output "
              "of the same command run with --debug", file=sys.stderr)
        return EXIT_INTERNAL


def compose(config_name: str, overrides: list[str]) -> dict:
    """``configs/<config_name>.yaml`` with ``overrides`` (Hydra syntax), resolved, as a plain dict."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    GlobalHydra.instance().clear()
    with initialize_config_module(config_module="configs", version_base=None):
        cfg = hydra_compose(config_name=config_name, overrides=list(overrides))
    d = OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    d.pop("hydra", None)
    return d


def check_overrides(config_name: str, overrides: list[str], config_module: str = "configs") -> None:
    """Raise ``ValueError`` (one line, naming the argument) if ``overrides`` do not compose with
    ``configs/<config_name>.yaml``; values are not resolved (mandatory ``???`` fields may stay unset)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module=config_module, version_base=None):
            hydra_compose(config_name=config_name, overrides=list(overrides))
    except Exception as e:  # noqa: BLE001 - Hydra/OmegaConf parse and composition errors
        GlobalHydra.instance().clear()
        hint = suggest_keys(config_name, list(overrides), config_module)
        raise ValueError(f"{hint.rstrip() + ' ' if hint else ''}{_composition_error(e)} "
                         f"(arguments: {' '.join(overrides) or 'none'})") from None
    finally:
        GlobalHydra.instance().clear()


def added_keys(config_name: str, overrides: list[str], config_module: str = "configs") -> list[str]:
    """The ``+key=value`` overrides that add a top-level setting ``configs/<config_name>.yaml`` does not have
    (Hydra accepts any such key, so a job that reads only the settings it knows would ignore a mistyped one;
    a CLI whose job takes no extra settings refuses them with this)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra

    plus = [a for a in overrides if a.startswith("+") and not a.startswith("++") and "=" in a]
    if not plus:
        return []
    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module=config_module, version_base=None):
            known = set(hydra_compose(config_name=config_name))
    finally:
        GlobalHydra.instance().clear()
    return [a for a in plus if a[1:].split("=", 1)[0].split(".", 1)[0] not in known]


def run_hydra(config_name: str, job: Callable[[dict], str | None], argv: list[str] | None = None, *,
              usage: str = "", sections: dict | None = None) -> None:
    """The entry point of a Hydra CLI; exits with the status of :func:`run_guarded`. ``--help``/``-h`` prints
    ``usage`` and every setting with its default and help (:func:`hydra_help`; ``sections``: config sections
    that are dataclasses, for their help and allowed values)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if wants_help(argv):
        print(hydra_help(config_name, usage or f"usage: {sys.argv[0]} [key=value ...]", sections=sections))
        return
    debug = debug_requested(argv)
    argv = [a for a in argv if a != "--debug"]
    if any(a.startswith("-") for a in argv):  # Hydra's own flags (--cfg, --multirun, …)
        import hydra
        from omegaconf import OmegaConf

        def _task(cfg) -> None:
            code = run_guarded(lambda: _print(job(OmegaConf.to_container(cfg, resolve=True))), debug)
            if code:
                raise SystemExit(code)

        sys.argv = [sys.argv[0], *argv]
        hydra.main(version_base=None, config_path="pkg://configs", config_name=config_name)(_task)()
        return
    holder: dict = {}

    def _compose() -> None:
        try:
            holder["cfg"] = compose(config_name, argv)
        except Exception as e:  # noqa: BLE001 - Hydra/OmegaConf parse and composition errors
            hint = suggest_keys(config_name, argv)
            raise ValueError(f"{hint.rstrip() + ' ' if hint else ''}{_composition_error(e)} "
                             f"(arguments: {' '.join(argv) or 'none'})") from e

    code = run_guarded(_compose, debug)
    if code:
        raise SystemExit(code)
    logging.basicConfig(stream=sys.stdout, level=logging.INFO,
                        format="[%(asctime)s][%(name)s][%(levelname)s] - %(message)s")
    code = run_guarded(lambda: _print(job(holder["cfg"])), debug)
    if code:
        raise SystemExit(code)


def _print(msg) -> None:
    if msg:
        print(msg)


def fail(msg: str) -> None:
    """End a CLI on bad input: ``error: <msg>`` on stderr, exit 2."""
    print(f"error: {msg}", file=sys.stderr)
    raise SystemExit(EXIT_USAGE)


def plain_config(cfg, help_command: str) -> dict:
    """A Hydra config as a resolved plain dict; a missing mandatory setting ends the CLI with ``error:``
    naming it and ``help_command`` (e.g. ``python -m eval --help``)."""
    from omegaconf import OmegaConf
    from omegaconf.errors import MissingMandatoryValue

    try:
        return OmegaConf.to_container(cfg, resolve=True, throw_on_missing=True)
    except MissingMandatoryValue as e:
        fail(f"missing required setting {e.full_key}= (see {help_command})")


def parse_part(spec, error: type[Exception] = ValueError, done: str = "parts are done") -> tuple[int | None, int]:
    """A ``shard=`` value of a command split over jobs: ``"i/n"`` → (i, n) with 0 ≤ i < n; ``"merge/n"`` →
    (None, n). Anything else raises ``error`` naming the value and the two accepted forms (``done`` ends the
    sentence about when to merge)."""
    import re

    m = re.fullmatch(r"\s*(\d+|merge)\s*/\s*(\d+)\s*", str(spec))
    if not m or int(m.group(2)) < 1 or (m.group(1) != "merge" and int(m.group(1)) >= int(m.group(2))):
        raise error(f"shard={spec!r}: must be i/n with 0 <= i < n (e.g. shard=0/4), or merge/n once all n {done}")
    return (None if m.group(1) == "merge" else int(m.group(1))), int(m.group(2))


# ------------------------------------------------------------------------------------------------------------
# The one entry mechanism of the commands that have no YAML config: a dataclass of options (each declared with
# ``infra.schema.field``: default, help, choices / range), ``key=value`` arguments in Hydra's override grammar,
# ``--help`` listing the options, and every bad input one ``error:`` line (exit 2). Older spellings that the docs
# use stay valid: ``--key value`` / ``--key=value`` / ``--flag`` (a true/false option) and positional arguments
# for the options named in ``positional`` (the last of them may collect several if it is a list).

REQUIRED = "???"  # the default of an option the command line must set (OmegaConf's spelling)
HELP_FLAGS = ("-h", "--help", "help")


def wants_help(argv: list[str]) -> bool:
    return any(a in HELP_FLAGS for a in argv)


def _range_text(meta) -> str:
    if "choices" in meta:
        return f"one of {', '.join(map(str, meta['choices']))}"
    if "range" in meta:
        return f"in [{meta['range'][0]}, {meta['range'][1]}]"
    if "check" in meta:
        return str(meta["check"][1])
    return ""


def option_rows(cls, prefix: str = "") -> list[tuple[str, str, str]]:
    """(key, default, help with allowed values) of every field of dataclass ``cls`` (``prefix``: its section)."""
    import dataclasses

    rows = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = REQUIRED
        allowed = _range_text(f.metadata)
        text = " ".join(t for t in (f.metadata.get("help", ""), f"({allowed})" if allowed else "") if t)
        rows.append((prefix + f.name, "(required)" if default == REQUIRED else _value_text(default), text))
    return rows


def _value_text(v) -> str:
    if isinstance(v, bool):
        return str(v).lower()
    if v is None:
        return "null"
    if isinstance(v, (list, tuple)):
        return "[" + ",".join(_value_text(x) for x in v) + "]"
    return str(v)


def format_help(usage: str, rows: list[tuple[str, str, str]], more: str = "") -> str:
    """``usage`` then one line per option: ``key=default  help (allowed)``."""
    rows = [(k, d if len(d) <= 60 else d[:56] + " ...", h) for k, d, h in rows]
    width = min(34, max((len(k) + len(d) + 1 for k, d, _ in rows), default=0))
    lines = [usage.rstrip(), "", "options (key=value; default shown):"]
    for k, d, h in rows:
        kd = f"{k}={d}"
        lines.append(f"  {kd:<{width}}  {h}".rstrip() if len(kd) <= width else f"  {kd}\n  {'':<{width}}  {h}".rstrip())
    if more:
        lines += ["", more.rstrip()]
    return "\n".join(lines)


def parse_overrides(argv: list[str], positional: tuple[str, ...] = (), flags: tuple[str, ...] = (),
                    lists: tuple[str, ...] = ()) -> dict:
    """``key=value`` arguments (Hydra's override grammar: ``n=3``, ``levels=[0.1,0.5]``, ``name='a b'``) as a
    dict of typed values. Also accepted: ``--key value``, ``--key=value``, ``--flag`` for a key in ``flags``
    (true), and bare arguments, taken in order by the keys of ``positional`` (the last one collects the rest
    when it is in ``lists``). Dashes in ``--long-names`` become underscores. A key in ``lists`` (a list
    setting) also takes ``a,b`` (Hydra's sweep form, which no command here sweeps) as the list ``[a, b]`` and
    one value ``a`` as ``[a]``. Raises ``ValueError`` naming the argument."""
    from hydra.core.override_parser.overrides_parser import OverridesParser

    pairs: list[str] = []
    bare: list[str] = []
    i = 0
    while i < len(argv):
        a = argv[i]
        if a.startswith("--") and len(a) > 2:
            key, eq, val = a[2:].partition("=")
            key = key.replace("-", "_")
            if eq:
                pairs.append(f"{key}={val}")
            elif key in flags:
                pairs.append(f"{key}=true")
            elif i + 1 < len(argv):
                pairs.append(f"{key}={argv[i + 1]}")
                i += 1
            else:
                raise ValueError(f"{a}: needs a value ({key}=<value>)")
        elif "=" in a and not a.startswith("="):
            pairs.append(a)
        else:
            bare.append(a)
        i += 1
    out: dict = {}
    if bare:
        if not positional:
            raise ValueError(f"unexpected argument {bare[0]!r}: settings are key=value")
        keys = list(positional)
        for j, b in enumerate(bare):
            if j < len(keys) - 1 or (j == len(keys) - 1 and keys[-1] not in lists):
                out[keys[j]] = _yaml_value(b)
            elif keys[-1] in lists:
                out.setdefault(keys[-1], []).append(_yaml_value(b))
            else:
                raise ValueError(f"unexpected argument {b!r}: takes at most {len(keys)} bare argument(s) "
                                 f"({', '.join(keys)}); other settings are key=value")
    parser = OverridesParser.create()
    for p in pairs:
        try:
            ov = parser.parse_overrides([p])[0]
        except Exception as e:  # noqa: BLE001 - Hydra's grammar errors
            raise ValueError(f"cannot parse arguments: {p!r}: {_one_line(e).split(' See https')[0]}") from None
        key = ov.key_or_group.lstrip("+~")
        if ov.is_sweep_override():
            if key in lists and _comma_list(ov):
                out[key] = list(ov.sweep_iterator())
                continue
            raise ValueError(f"{p!r}: a sweep (a,b) is not allowed here; give one value")
        val = ov.value()
        out[key] = list(val) if isinstance(val, (list, tuple)) else [val] if key in lists and val is not None else val
    return out


def _comma_list(ov) -> bool:
    """An override of the form ``key=a,b,c`` (plain values, no ``choice()``/``range()``, no nested lists)."""
    from hydra.core.override_parser.types import ChoiceSweep

    val = ov.value()
    return isinstance(val, ChoiceSweep) and val.simple_form and not any(isinstance(x, (list, dict)) for x in val.list)


def _yaml_value(text: str):
    """A bare argument as typed value (``6`` → 6, ``true`` → True); a path stays text."""
    import yaml

    try:
        v = yaml.safe_load(text)
    except yaml.YAMLError:
        return text
    return v if isinstance(v, (int, float, bool)) and not isinstance(v, str) else text


def unknown_key_error(key: str, known: list[str], help_command: str) -> str:
    from .registry import suggest

    return f"unknown setting {key!r}; {suggest(key, known)}settings: {', '.join(known)} (see {help_command})"


def build_options(cls, values: dict, help_command: str):
    """``cls(**values)`` checked: an unknown key is an error with "did you mean" and the known ones; a required
    option left unset, a value of the wrong type, a choice or range not met is an error naming key and value
    (``infra.schema.validate_config``). Lists become tuples for tuple fields; whole numbers floats for floats."""
    import dataclasses

    from .schema import ConfigError, validate_config

    fields = {f.name: f for f in dataclasses.fields(cls)}
    for k in values:
        if k not in fields:
            raise ConfigError(unknown_key_error(k, list(fields), help_command))
    kw = {}
    for name, f in fields.items():
        if name not in values:
            continue
        v = values[name]
        default = f.default if f.default is not dataclasses.MISSING else None
        t = f.type if isinstance(f.type, str) else getattr(f.type, "__name__", "")
        if isinstance(v, list) and (isinstance(default, tuple) or t.startswith("tuple")):
            v = tuple(v)
        elif isinstance(v, int) and not isinstance(v, bool) and (isinstance(default, float) or t.startswith("float")):
            v = float(v)
        kw[name] = v
    missing = [n for n, f in fields.items() if kw.get(n, f.default) == REQUIRED]
    if missing:
        raise ConfigError(f"missing {missing[0]}= (a required setting; see {help_command})")
    try:
        opts = cls(**kw)
    except TypeError as e:
        raise ConfigError(f"{_one_line(e)} (see {help_command})") from None
    validate_config(opts)
    return opts


def run_options(prog: str, usage: str, cls, job: Callable[[object], object], argv: list[str] | None = None,
                positional: tuple[str, ...] = (), more: str = "") -> int:
    """The entry point of a command whose options are dataclass ``cls``: ``--help`` prints ``usage`` and the
    options (exit 0); the arguments become ``cls`` (:func:`parse_overrides`, :func:`build_options`) and
    ``job(options)`` runs under :func:`run_guarded` (its return value, if any, is printed; an ``int`` is the
    exit status). Returns the exit status."""
    import dataclasses

    argv = list(sys.argv[1:] if argv is None else argv)
    if wants_help(argv):
        print(format_help(usage, option_rows(cls), more))
        return 0
    debug = debug_requested(argv)
    argv = [a for a in argv if a != "--debug"]
    fields = dataclasses.fields(cls)
    flags = tuple(f.name for f in fields if f.type in ("bool", bool))
    lists = tuple(f.name for f in fields if str(f.type).startswith(("tuple", "list")))
    status = {"code": 0}

    def _go() -> None:
        opts = build_options(cls, parse_overrides(argv, positional, flags, lists), f"python -m {prog} --help")
        res = job(opts)
        if isinstance(res, int) and not isinstance(res, bool):
            status["code"] = res
        else:
            _print(res)

    return run_guarded(_go, debug) or status["code"]


# ------------------------------------------------------------------------------------------------------------
# --help of the Hydra commands (configs/<name>.yaml): every setting with its default, the YAML comment beside
# it, and for sections that are dataclasses (structured configs) their help and allowed values.

def _yaml_comments(config_name: str, config_module: str) -> dict[str, str]:
    """``key -> comment`` of the ``key: value  # comment`` lines of the config and the YAML files its defaults
    list names (one level: ``eval/common``)."""
    import importlib.resources as res
    import re

    import yaml

    comments: dict[str, str] = {}
    base = res.files(config_module)

    def read(rel: str) -> None:
        p = base.joinpath(rel + ".yaml")
        if not p.is_file():
            return
        text = p.read_text()
        for line in text.splitlines():
            m = re.match(r"^([A-Za-z_][\w]*):\s*[^#]*?#\s*(.+)$", line)
            if m and m.group(1) not in comments:
                comments[m.group(1)] = m.group(2).strip()
        try:
            data = yaml.safe_load(text) or {}
        except yaml.YAMLError:
            return
        for d in data.get("defaults", []) if isinstance(data, dict) else []:
            if isinstance(d, str) and d != "_self_" and rel != d:
                read(d.lstrip("/"))

    read(config_name)
    return comments


def config_rows(config_name: str, config_module: str = "configs", sections: dict | None = None,
                overrides: list[str] = ()) -> list[tuple[str, str, str]]:
    """(key, default, help) of every setting of ``<config_module>/<config_name>``, composed with ``overrides``
    (``hydra`` settings left out); the keys under a section in ``sections`` (name -> dataclass) take the
    dataclass's help and allowed values (name ``""``: the dataclass of the top-level settings)."""
    from hydra import compose as hydra_compose
    from hydra import initialize_config_module
    from hydra.core.global_hydra import GlobalHydra
    from omegaconf import OmegaConf

    GlobalHydra.instance().clear()
    try:
        with initialize_config_module(config_module=config_module, version_base=None):
            cfg = hydra_compose(config_name=config_name, overrides=list(overrides))
    finally:
        GlobalHydra.instance().clear()
    d = OmegaConf.to_container(cfg, resolve=False)
    d.pop("hydra", None)
    comments = _yaml_comments(config_name, config_module)
    sections = dict(sections or {})
    if "" in sections:  # the dataclass of the top-level settings: its help where the YAML has no comment
        comments = {**{r[0]: r[2] for r in option_rows(sections.pop(""))}, **comments}
    rows: list[tuple[str, str, str]] = []

    def walk(node, prefix: str) -> None:
        for k, v in node.items():
            key = prefix + str(k)
            if not prefix and k in sections:
                meta = {r[0]: r for r in option_rows(sections[k], key + ".")}
                for kk, vv in (v or {}).items():
                    full = f"{key}.{kk}"
                    rows.append((full, "(required)" if vv == REQUIRED else _value_text(vv),
                                 meta[full][2] if full in meta else ""))
                continue
            if isinstance(v, dict) and v:
                walk(v, key + ".")
            else:
                rows.append((key, "(required)" if v == REQUIRED else _value_text(v), comments.get(key, "")))

    walk(d, "")
    return rows


def hydra_help(config_name: str, usage: str, config_module: str = "configs", sections: dict | None = None,
               more: str = "") -> str:
    return format_help(usage, config_rows(config_name, config_module, sections), more)


def suggest_keys(config_name: str, overrides: list[str], config_module: str = "configs") -> str:
    """For a failed composition: ``unknown setting 'x'; did you mean 'y'?`` for the first override whose key the
    config does not have (``""`` when every key exists)."""
    try:
        known = [r[0] for r in config_rows(config_name, config_module)]
    except Exception:  # noqa: BLE001 - the help is a courtesy; the composition error stands on its own
        return ""
    from .registry import suggest

    heads = {k.split(".")[0] for k in known}
    for a in overrides:
        if "=" not in a or a.startswith("-"):
            continue
        key = a.split("=", 1)[0].lstrip("+~")
        if key in known or key.split(".")[0] in heads and "." not in key or "/" in key or key.startswith("hydra"):
            continue
        if any(k.startswith(key + ".") for k in known):
            continue
        return f"unknown setting {key!r}; {suggest(key, known)}"
    return ""
