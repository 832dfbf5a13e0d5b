"""Moved to :mod:`infra.schema` (declaring and checking settings is plumbing every layer's CLI uses); this name
stays for the modules and configs that import it from here."""
from infra.schema import (ConfigError, _annotation, _in_section, _loose_mappings, above, at_least,  # noqa: F401
                          between, field, make_section, non_empty, not_allowed, store_structured, validate_config,
                          validate_section)
