"""Flask's JSON responses written by orjson: the same JSON values as the standard provider, faster.

An inspect answer of 10,000 messages is several megabytes of JSON; the standard
library's encoder (with every non-ASCII character escaped) took a tenth of the
request. orjson writes UTF-8 directly, in C, without escaping: the values are
the same, the bytes fewer. Dates and dataclasses still go through Flask's own
conversion (an HTTP date, ``dataclasses.asdict``), so no answer changes shape;
what orjson refuses (an integer wider than 64 bits) falls back to the standard
provider. Indented (debug) output stays the standard provider's too.
"""

from __future__ import annotations

from typing import Any

import orjson
from flask import Response
from flask.json.provider import DefaultJSONProvider

# Dates and dataclasses go to ``default`` (Flask's conversion) rather than orjson's own formats.
_OPTIONS = orjson.OPT_PASSTHROUGH_DATETIME | orjson.OPT_PASSTHROUGH_DATACLASS | orjson.OPT_NON_STR_KEYS


class OrjsonProvider(DefaultJSONProvider):
    """``jsonify`` and every view's dict answer, serialized by orjson; ``dumps``/``loads`` unchanged."""

    def response(self, *args: Any, **kwargs: Any) -> Response:
        if (self.compact is None and self._app.debug) or self.compact is False:
            return super().response(*args, **kwargs)
        obj = self._prepare_response_obj(args, kwargs)
        # the newline jsonify ends with, written by orjson: ``body + b"\n"`` copied the whole answer
        options = _OPTIONS | orjson.OPT_APPEND_NEWLINE | (orjson.OPT_SORT_KEYS if self.sort_keys else 0)
        try:
            body = orjson.dumps(obj, default=self.default, option=options)
        except TypeError:  # orjson.JSONEncodeError: e.g. an integer past 64 bits, which json writes
            return super().response(*args, **kwargs)
        return self._app.response_class(body, mimetype=self.mimetype)
