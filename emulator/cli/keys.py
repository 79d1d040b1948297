"""``mcemu keys``: the CURVE keys of a cluster that listens on tcp (emulator.live.keys).

    mcemu keys init                     # the server pair, an admin credential (your user name), "nodes"
    mcemu keys issue alice              # a client credential: hand keys/issued/alice.toml to alice
    mcemu keys issue rack2 --role node --nodes 4-7  # a node credential for `mcemu node --key`,
                                        # bound to nodes 4-7 (without --nodes: any node)
    mcemu keys list                     # who is let in
    mcemu keys revoke alice             # refused from now on, her open connections too

Everything lives in MCEMU_HOME/keys (0700; files 0600). A running daemon re-reads the
principals when they change: no restart is needed to issue or revoke.
"""
from __future__ import annotations

from emulator.cli import UsageError, print_json
from emulator.live import home as homemod


def cmd_keys(args) -> int:
    # lazy: the keys and their ZAP side (emulator.live.auth, zmq) 14 ms at start-up of every mcemu command
    from emulator.live import keys as keysmod
    from emulator.live.auth import LOCAL

    home = homemod.home_dir()
    try:
        if args.action == "init":
            made = keysmod.init(home, args.admin or LOCAL.name, force=args.force)
            if args.json:
                print_json({"keys": str(keysmod.keys_dir(home)), "issued": [str(p) for p in made]})
            else:
                print(f"cluster keys in {keysmod.keys_dir(home)}; admin credential {made[0]}, node credential "
                      f"{made[1]}. Start with `mcemu up --listen tcp://HOST:PORT`; clients use --key FILE "
                      f"(or MCEMU_KEY), remote nodes `mcemu node --key {made[1]}`")
        elif args.action == "issue":
            if not args.name:
                raise UsageError("mcemu keys issue NAME [--role client|node|admin]")
            if args.nodes is not None and args.role != "node":
                raise UsageError("--nodes binds a node credential: use it with --role node")
            path = keysmod.issue(home, args.name, args.role, nodes=args.nodes)
            if args.json:
                print_json({"name": args.name, "role": args.role, "nodes": args.nodes, "credential": str(path)})
            else:
                bound = f" for nodes {args.nodes}" if args.nodes else ""
                print(f"issued {args.role} key {args.name!r}{bound}: {path}; hand it over privately (it holds a "
                      f"secret), to be used as --key FILE or MCEMU_KEY=FILE")
        elif args.action == "revoke":
            if not args.name:
                raise UsageError("mcemu keys revoke NAME")
            keysmod.revoke(home, args.name)
            if not args.json:
                print(f"revoked {args.name!r}: refused from now on, its open connections too")
            else:
                print_json({"revoked": args.name})
        else:
            rows = keysmod.principals(home)
            if args.json:
                print_json({"initialized": keysmod.initialized(home), "principals": rows})
            elif not keysmod.initialized(home):
                print(f"no cluster keys in {keysmod.keys_dir(home)}: `mcemu keys init` makes them")
            else:
                for r in rows:
                    print(f"{r['name']:24} {r['role']:8} {r['nodes'] or '':16} {r['public']}")
    except keysmod.KeyFileError as e:
        raise UsageError(str(e)) from None
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("keys", help="CURVE keys for a cluster on tcp: init, issue, list, revoke",
                       description="Keys for `mcemu up --listen tcp://...`: every tcp connection is CURVE-encrypted "
                                   "and let in only with a credential issued here. Roles: admin (every job, "
                                   "shutdown), client (its own jobs; its commands run as its own local account, "
                                   "which needs a root daemon), node (a node agent; it cannot submit).")
    p.add_argument("action", nargs="?", default="list", choices=("init", "issue", "list", "revoke"))
    p.add_argument("name", nargs="?", help="the principal (issue, revoke): its local account name for commands")
    p.add_argument("--role", default="client", choices=("client", "node", "admin"), help="issue: the key's role")
    p.add_argument("--nodes", help="issue --role node: the node ids it may register, e.g. 4-7,9 (default: any)")
    p.add_argument("--admin", help="init: the admin credential's name (default: your user name)")
    p.add_argument("--force", action="store_true", help="init: new server keys; every credential is revoked (restart a running cluster: it keeps "
                        "the server key it started with)")
    p.add_argument("--json", action="store_true", help="print one JSON document")
    p.set_defaults(func=cmd_keys)
