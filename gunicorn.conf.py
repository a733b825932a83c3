"""Gunicorn settings read from the working directory by ``hango serve`` and the test servers.

The request line may be as long as gunicorn allows (8190 bytes, not its default
4094): the OpenAPI document allows query values (a part id in ``?full=``) whose
percent-encoded UTF-8 needs that much, and a longer line is answered 414 by
gunicorn itself, before hango can answer in its JSON envelope.
"""

import os

limit_request_line = 8190

# Behind the reverse proxy (deploy/nginx.conf) only the proxy's own address may set
# X-Forwarded-* headers; hango reads the same list for the client's address.
forwarded_allow_ips = os.environ.get("HANGO_TRUSTED_PROXIES", "")
