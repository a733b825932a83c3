"""The admin web page under ``/admin``: server-rendered shells and their static files.

The shells carry no data. The page reads the API key from the browser's session
storage and talks only to the public ``/v1`` API, like any other client. The
Content-Security-Policy allows scripts from this origin only (Alpine.js needs
``'unsafe-eval'`` for its expressions) and no inline script or event handler,
a second fence behind rendering all content as text.
"""

from __future__ import annotations

from flask import Blueprint, Response, render_template

from hango.config import REPO_ROOT

blp = Blueprint(
    "admin",
    __name__,
    url_prefix="/admin",
    root_path=str(REPO_ROOT),
    template_folder="templates",
    static_folder="static",
    static_url_path="/static",
)

CSP = "; ".join(
    (
        "default-src 'self'",
        "script-src 'self' 'unsafe-eval'",
        "style-src 'self'",
        "img-src 'self' data:",
        "connect-src 'self'",
        "object-src 'none'",
        "base-uri 'none'",
        "form-action 'self'",
        "frame-ancestors 'none'",
    )
)

# URL rule → (endpoint, template). The ids in the rules reach the template only as
# the strings the page asks the API about; the page never trusts them for access.
PAGES = {
    "/": ("sign_in", "admin/sign_in.html"),
    "/agents": ("agents", "admin/agents.html"),
    "/agents/<uuid:agent_id>": ("agent", "admin/agent.html"),
    "/sessions": ("sessions", "admin/sessions.html"),
    "/sessions/<uuid:session_id>": ("session", "admin/session.html"),
    "/sessions/<uuid:session_id>/context": ("context", "admin/context.html"),
    "/sessions/<uuid:session_id>/calls": ("calls", "admin/calls.html"),
    "/usage": ("usage", "admin/usage.html"),
    "/audit": ("audit", "admin/audit.html"),
}


def _page(template: str):
    def view(**ids) -> str:
        return render_template(template, **{name: str(value) for name, value in ids.items()})

    return view


for rule, (endpoint, template) in PAGES.items():
    blp.add_url_rule(rule, endpoint, _page(template))


@blp.after_request
def _fence(response: Response) -> Response:
    """Security headers on every admin response; the shells are never cached (they follow releases)."""
    response.headers["Content-Security-Policy"] = CSP
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "no-referrer"
    if response.mimetype == "text/html":
        response.headers["Cache-Control"] = "no-store"
    return response
