"""Which addresses a tenant's MCP server may live at: public ones, or the operator's allowed networks.

A URL is checked when it is registered and again at every connect: the name is
resolved once, every address it resolves to must pass, and the connection goes
to the address that was checked (so a name that changes its answer between the
check and the connect, DNS rebinding, reaches nothing new).
"""

from __future__ import annotations

import ipaddress
import socket
from collections.abc import Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import anyio

Network = ipaddress.IPv4Network | ipaddress.IPv6Network
Address = ipaddress.IPv4Address | ipaddress.IPv6Address
MAX_URL = 2000


class RefusedAddress(ValueError):
    """The URL is malformed, does not resolve, or reaches an address no tenant may reach."""


@dataclass(frozen=True)
class Endpoint:
    """A URL's parts that a connection needs: its scheme, host and port."""

    scheme: str
    host: str
    port: int


def parse_url(url: str) -> Endpoint:
    """The endpoint of an ``http``/``https`` URL without credentials; raises RefusedAddress otherwise."""
    if len(url) > MAX_URL:
        raise RefusedAddress(f"the URL is longer than {MAX_URL} characters")
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise RefusedAddress(f"the URL is malformed: {exc}") from None
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise RefusedAddress("the URL must be http:// or https:// with a host")
    if parts.username or parts.password:
        raise RefusedAddress("the URL must not carry a user or password (send them as headers)")
    return Endpoint(parts.scheme, parts.hostname, port or (443 if parts.scheme == "https" else 80))


def refusal(address: Address, allowed: Sequence[Network]) -> str | None:
    """Why ``address`` may not be reached (loopback, private, link-local...), or None when it may."""
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped:
        address = address.ipv4_mapped
    if any(address in network for network in allowed):
        return None
    for kind in ("loopback", "link_local", "private", "multicast", "reserved", "unspecified"):
        if getattr(address, f"is_{kind}"):
            return kind.replace("_", "-")
    return None if address.is_global else "not public"


def _checked(host: str, answers: Sequence[str], allowed: Sequence[Network]) -> str:
    if not answers:
        raise RefusedAddress(f"{host} does not resolve")
    for answer in answers:
        reason = refusal(ipaddress.ip_address(answer.split("%")[0]), allowed)
        if reason:
            raise RefusedAddress(
                f"{host} resolves to a {reason} address, which MCP servers may not use "
                "(the operator can allow a network with HANGO_MCP_ALLOW_NETWORKS)"
            )
    return answers[0]


def check_endpoint(endpoint: Endpoint, allowed: Sequence[Network]) -> str:
    """Resolve the endpoint's host once and return the address to connect to, every answer checked."""
    try:
        infos = socket.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM)
    except OSError:
        infos = []
    return _checked(endpoint.host, [info[4][0] for info in infos], allowed)


async def check_endpoint_async(endpoint: Endpoint, allowed: Sequence[Network]) -> str:
    """``check_endpoint`` on the event loop, as a connect does it."""
    try:
        infos = await anyio.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM)
    except OSError:
        infos = []
    return _checked(endpoint.host, [str(info[4][0]) for info in infos], allowed)
