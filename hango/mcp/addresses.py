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


NAT64 = ipaddress.IPv6Network("64:ff9b::/96")  # RFC 6052's well-known prefix: the IPv4 in the last 32 bits
NAT64_LOCAL = ipaddress.IPv6Network("64:ff9b:1::/48")  # RFC 8215's local-use prefix
TEREDO = ipaddress.IPv6Network("2001::/32")
SIX_TO_FOUR = ipaddress.IPv6Network("2002::/16")


def embedded_ipv4(address: ipaddress.IPv6Address) -> ipaddress.IPv4Address | None:
    """The IPv4 address an IPv6 one carries (IPv4-mapped or -compatible, 6to4, Teredo's client, NAT64),
    which a relay or translator on the path may deliver to; None when it carries none."""
    value = int(address)
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if value >> 32 == 0 and value > 1:  # IPv4-compatible ``::a.b.c.d`` (deprecated; ``::1`` is loopback)
        return ipaddress.IPv4Address(value)
    if address in SIX_TO_FOUR:
        return address.sixtofour
    if address in TEREDO:
        return address.teredo[1] if address.teredo else None
    if address in NAT64:
        return ipaddress.IPv4Address(value & 0xFFFFFFFF)
    if address in NAT64_LOCAL:  # a /48 prefix: the IPv4's first 16 bits, the "u" octet, its last 16
        return ipaddress.IPv4Address(((value >> 64) & 0xFFFF) << 16 | (value >> 40) & 0xFFFF)
    return None


def refusal(address: Address, allowed: Sequence[Network]) -> str | None:
    """Why ``address`` may not be reached (loopback, private, link-local...), or None when it may; an
    IPv6 address carrying an IPv4 one is judged by the IPv4 one too."""
    inner = embedded_ipv4(address) if isinstance(address, ipaddress.IPv6Address) else None
    if inner is not None:
        reason = refusal(inner, allowed)
        if reason or address.ipv4_mapped is not None:
            return reason
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
