"""Reads around a down Delta (docs/protocol.md, "Reads while this
computer's Delta is down"): directly to the peer's own Delta over its
thunderbolt road, then its lan road, with the read ticket and the pinned
TLS that Delta keeps in <state>/direct.json. A read only: a call never
goes around Delta."""

from __future__ import annotations

import hashlib
import http.client
import os
import socket
import ssl
import sys
import urllib.parse
from datetime import datetime
from typing import TYPE_CHECKING, Any, Optional

from . import wire
from .errors import DeltaDown

if TYPE_CHECKING:
    from .client import Client

# A road's connect timeout when direct.json does not say it (an older
# Delta's): Delta writes each road's own (connect_timeout_ms).
DEFAULT_CONNECT_TIMEOUT = 3.0

# IP_BOUND_IF on macOS (netinet/in.h); SO_BINDTODEVICE on Linux.
_IP_BOUND_IF = 25


def parse_time(s: str) -> Optional[datetime]:
    """An RFC 3339 time as Go writes it (nanoseconds, Z or an offset)."""
    if not s:
        return None
    s = s.replace("Z", "+00:00")
    head, dot, frac = s.partition(".")
    if dot:
        digits = "".join(c for c in frac if c.isdigit())
        s = head + "." + digits[:6].ljust(6, "0") + frac[len(digits):]
    try:
        return datetime.fromisoformat(s)
    except ValueError:
        return None


def bind(sock: socket.socket, iface: str) -> None:
    """Bind a direct read's socket to its road's interface, as Delta binds
    its own: two interfaces may both hold 169.254/16 addresses, and a
    thunderbolt read must not leave by Wi-Fi."""
    if not iface:
        return
    if sys.platform.startswith("linux"):
        sock.setsockopt(socket.SOL_SOCKET, getattr(socket, "SO_BINDTODEVICE", 25), iface.encode())
    elif sys.platform == "darwin":
        sock.setsockopt(socket.IPPROTO_IP, _IP_BOUND_IF, socket.if_nametoindex(iface))


def connect_timeout(road: dict[str, Any]) -> float:
    """The road's connect timeout, in seconds, as Delta gave it."""
    ms = road.get("connect_timeout_ms", 0)
    return ms / 1000 if isinstance(ms, (int, float)) and ms > 0 else DEFAULT_CONNECT_TIMEOUT


class _RoadConn(http.client.HTTPConnection):
    """One read on one road: bound to its interface, TLS pinned to the
    peer's certificate when the road has a pin (checked before anything is
    sent), plain TCP otherwise."""

    def __init__(self, road: dict[str, Any], cert: Optional[tuple[str, str]]) -> None:
        host, _, port = road["address"].rpartition(":")
        super().__init__(host.strip("[]"), int(port), timeout=connect_timeout(road))
        self.road = road
        self.cert = cert

    def connect(self) -> None:
        family = socket.AF_INET6 if ":" in self.host else socket.AF_INET
        sock = socket.socket(family, socket.SOCK_STREAM)
        try:
            bind(sock, self.road.get("interface", ""))
            sock.settimeout(self.timeout)
            sock.connect((self.host, self.port))
            pin = self.road.get("pin", "")
            if pin:
                if not self.cert:
                    raise OSError("the road is pinned TLS and this computer's certificate is not named")
                ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
                ctx.minimum_version = ssl.TLSVersion.TLSv1_3
                ctx.check_hostname = False
                ctx.verify_mode = ssl.CERT_NONE  # the pin below is the check: the certificate is self-signed
                ctx.load_cert_chain(*self.cert)
                sock = ctx.wrap_socket(sock)
                der = sock.getpeercert(binary_form=True) or b""
                got = hashlib.sha256(der).hexdigest()
                if got != pin:
                    raise OSError(f"the certificate at {self.road['address']} is {got}, not the pinned {pin}")
            sock.settimeout(None)
        except BaseException:
            sock.close()
            raise
        self.sock = sock


def read_direct(c: "Client", down: DeltaDown, peer: str, app: str, path: str,
                h: dict[str, str]) -> tuple[http.client.HTTPResponse, http.client.HTTPConnection, str]:
    """Read path from app on peer without this computer's Delta, which is
    down (down says why). Returns the answer, its connection and the road
    it came over;
    raises :class:`DeltaDown` naming why when it cannot (no direct.json,
    no road, no fresh ticket, the tailnet road asked for)."""

    def because(why: str) -> DeltaDown:
        return DeltaDown(f"{down.detail}; and it cannot be read around: {why}", state_dir=down.state_dir, url=down.url)

    import json
    path_json = os.path.join(c.state_dir, wire.DIRECT_FILE)
    try:
        with open(path_json, "rb") as f:
            d = json.load(f)
    except FileNotFoundError:
        raise because(f"there is no {wire.DIRECT_FILE} (Delta writes it while it runs)") from None
    except (OSError, ValueError) as e:
        raise because(f"{path_json} is not valid: {e}") from None
    dp = next((p for p in d.get("peers") or [] if p.get("name") == peer), None)
    route = next((v for k, v in h.items() if k.lower() == wire.ROUTE.lower()), "")
    expires = parse_time(dp.get("expires", "")) if dp else None
    if route == "tailnet":
        raise because("the tailnet road lives inside Delta")
    if not dp or not dp.get("roads"):
        raise because(f"Delta knew no lan or thunderbolt road to {peer} (the tailnet road lives inside Delta)")
    if not dp.get("ticket"):
        raise because(f"Delta held no read ticket for {peer}")
    if expires is None or c.now() >= expires.timestamp():
        at = expires.astimezone().strftime("%H:%M:%S") if expires else "an unknown time"
        raise because(f"its read ticket for {peer} expired at {at} (Delta renews it every 5 minutes while it runs)")
    cert = None
    if d.get("client_cert"):
        cert = (os.path.join(c.state_dir, d["client_cert"]), os.path.join(c.state_dir, d["client_key"]))
        if not (os.path.exists(cert[0]) and os.path.exists(cert[1])):
            raise because("this computer's certificate cannot be read")
    out = {k: v for k, v in h.items()
           if not k.lower().startswith("x-delta-") and k.lower() not in ("authorization", "cookie")}
    out["Authorization"] = "Delta " + dp["ticket"]
    for k, v in h.items():
        if k.lower() in (wire.TIMEOUT.lower(), wire.APP.lower()):
            out[k] = v
    tried: list[str] = []
    for rd in dp["roads"]:
        if route and rd.get("road") != route:
            continue
        if len(tried) == 2:
            break  # one fall-back, as Delta's
        conn = _RoadConn(rd, cert)
        try:
            conn.request("GET", f"/delta/v1/apps/{urllib.parse.quote(app, safe='')}{path}", headers=out)
            resp = conn.getresponse()
        except (OSError, http.client.HTTPException) as e:
            conn.close()
            tried.append(f"{rd.get('road')} ({rd.get('address')}): {e}")
            continue
        o = resp.headers.get(wire.OUTCOME, "")
        if o in ("unauthorized", "forbidden"):
            # The door refused the read ticket: the road's failure, as
            # Delta counts a door's refusal.
            resp.close()
            conn.close()
            tried.append(f"{rd.get('road')} ({rd.get('address')}): its door refused the read ticket ({resp.status})")
            continue
        if o in ("app_not_found", "app_unavailable"):
            # The owner's words, as the local API says them.
            del resp.headers[wire.OUTCOME]
            resp.headers[wire.OUTCOME] = "not_found" if o == "app_not_found" else "unavailable"
        resp.headers[wire.DIRECT] = "true"
        return resp, conn, rd.get("road", "")
    if not tried:
        raise because(f"Delta knew no {route} road to {peer}")
    raise because(f"{peer} did not answer on " + "; ".join(tried))
