"""Gunicorn settings read from the working directory by ``hango serve`` and the test servers.

The request line may be as long as gunicorn allows (8190 bytes, not its default
4094): the OpenAPI document allows query values (a part id in ``?full=``) whose
percent-encoded UTF-8 needs that much, and a longer line is answered 414 by
gunicorn itself, before hango can answer in its JSON envelope.
"""

limit_request_line = 8190
