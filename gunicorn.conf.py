"""Gunicorn settings read from the working directory by ``hango serve`` and the test servers.

The request line may be as long as gunicorn allows (8190 bytes, not its default
4094): the OpenAPI document allows query values (a part id in ``?full=``) whose
percent-encoded UTF-8 needs that much, and a longer line is answered 414 by
gunicorn itself, before hango can answer. What gunicorn refuses itself (that line,
a header over 8190 bytes, control bytes in a header) is answered in hango's JSON
envelope too: ``post_fork`` installs ``hango.refusals`` in each worker.
"""

import os

from hango import refusals, serving_collector

limit_request_line = 8190

# Behind the reverse proxy (deploy/nginx.conf) only the proxy's own address may set
# X-Forwarded-* headers; hango reads the same list for the client's address.
forwarded_allow_ips = os.environ.get("HANGO_TRUSTED_PROXIES", "")


def post_fork(server, worker):
    """Each worker answers gunicorn's own refusals in the JSON envelope."""
    refusals.install()


def post_request(worker, req, environ, resp):
    """Once the answer is written: the collector's pass, if the request left enough to collect."""
    serving_collector.between_requests()
