"""Lab machines, on the server host: ``lab add NAME``, ``lab list``, ``lab revoke NAME``.

Like ``latencylab user add``, these run Django on the server host against its database. A lab
machine then joins with the server's URL and the token ``lab add`` prints (once: only its hash
is stored).
"""

from __future__ import annotations

import argparse
import os
import socket
from typing import Any

from latencylab.commands.output import fail, print_table
from latencylab.commands.server_host import server_host_only
from latencylab.commands.service_cmds import migrate, setup_django

SERVER_URL_ENV = "LATENCYLAB_SERVER_URL"
LAB_TOKEN_ENV = "LATENCYLAB_LAB_TOKEN"


def add_parsers(sub: Any) -> None:
    """Register ``latencylab lab ...``."""
    lab = sub.add_parser("lab", help="lab machines: the identities with which lab machines join this server")
    lsub = lab.add_subparsers(dest="lab_command", required=True, metavar="SUBCOMMAND")
    add = lsub.add_parser("add", help="add a lab machine and print its token (shown once)")
    add.add_argument("name", help="its worker name, e.g. its host name (letters, digits and . - _)")
    add.add_argument(
        "--url",
        help=f"this server's URL as the lab machine reaches it, for the printed commands "
        f"(default: ${SERVER_URL_ENV}, else http://<this host>:8000)",
    )
    add.set_defaults(func=add_lab)
    listing = lsub.add_parser("list", help="list the lab machines: last call, address, devices, revoked")
    listing.set_defaults(func=list_labs)
    revoke = lsub.add_parser("revoke", help="revoke a lab machine's token; its devices go offline at once")
    revoke.add_argument("name")
    revoke.add_argument("--reason", default="", help="told to the machine at its next call")
    revoke.set_defaults(func=revoke_lab)


def _server_url(given: str | None) -> str:
    url = given or os.environ.get(SERVER_URL_ENV) or f"http://{socket.getfqdn()}:8000"
    return url.rstrip("/")


def add_lab(args: argparse.Namespace) -> int:
    """``latencylab lab add NAME [--url URL]``."""
    if (refused := server_host_only("lab add")) is not None:
        return refused
    setup_django()
    from django.core.exceptions import ValidationError

    from server.labs.services import add_lab_machine

    migrate()
    try:
        lab, token = add_lab_machine(args.name)
    except ValidationError as exc:
        return fail("; ".join(exc.messages))
    url = _server_url(args.url)
    print(f"lab machine {lab.name}")
    print(f"token: {token}")
    print("(shown only now: the server keeps its hash; revoke it with `latencylab lab revoke NAME`)")
    print()
    print("On the lab machine, either set")
    print(f"  export {SERVER_URL_ENV}={url}; export {LAB_TOKEN_ENV}={token}")
    print("or run")
    print(f"  latencylab worker --server {url} --token {token}")
    return 0


def _when(value: Any) -> str:
    return value.strftime("%Y-%m-%d %H:%M:%S") if value else "never"


def list_labs(args: argparse.Namespace) -> int:
    """``latencylab lab list``."""
    if (refused := server_host_only("lab list")) is not None:
        return refused
    setup_django()
    from server.labs.services import lab_machine_rows

    migrate()
    rows = lab_machine_rows()
    if not rows:
        print("no lab machines yet: latencylab lab add NAME")
        return 0
    table = []
    for row in rows:
        lab = row.machine
        state = "active"
        if lab.revoked_at is not None:
            state = f"revoked {_when(lab.revoked_at)}" + (f": {lab.revoked_reason}" if lab.revoked_reason else "")
        devices = ", ".join(f"{d.name} ({d.status})" for d in row.devices) or "-"
        table.append(
            [lab.name, _when(lab.created_at), _when(lab.last_seen_at), lab.last_address or "-", state, devices]
        )
    print_table(["name", "created (UTC)", "last seen (UTC)", "address", "state", "devices"], table)
    return 0


def revoke_lab(args: argparse.Namespace) -> int:
    """``latencylab lab revoke NAME [--reason TEXT]``."""
    if (refused := server_host_only("lab revoke")) is not None:
        return refused
    setup_django()
    from server.labs.models import LabMachine
    from server.labs.services import revoke_lab_machine

    migrate()
    lab = LabMachine.objects.filter(name=args.name.strip()).first()
    if lab is None:
        return fail(f"there is no lab machine named {args.name!r} (latencylab lab list)")
    was_revoked = lab.is_revoked
    gone = revoke_lab_machine(lab, reason=args.reason)
    if was_revoked:
        print(f"lab machine {lab.name} was revoked already, on {_when(lab.revoked_at)} UTC")
    else:
        print(f"lab machine {lab.name} revoked: its next call is refused")
    if gone:
        print(f"{len(gone)} device(s) taken offline: {lab.offline_reason()}")
    return 0
