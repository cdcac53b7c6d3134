"""Static bearer tokens from a CSV file, as kube-apiserver's ``--token-auth-file``
(staging/src/k8s.io/apiserver/plugin/pkg/authenticator/token/tokenfile): each line
``token,user,uid[,"group1,group2"]``; an empty token is skipped, a later line with the same
token wins. The users it names are ordinary users (RBAC decides what they may do); it is
how tests and small clusters get a user identity without certificates."""

from __future__ import annotations

import csv
import hmac
import logging
from pathlib import Path

from pykubelet.controlplane.registry.store import User

log = logging.getLogger(__name__)
AUTHENTICATED = "system:authenticated"


class TokenFileError(ValueError):
    pass


class StaticTokens:
    def __init__(self, users: dict[str, User]) -> None:
        self._users = users

    @classmethod
    def load(cls, path: Path) -> StaticTokens:
        """NewCSV: the tokens of ``path``, each user also in ``system:authenticated`` (the
        authenticated group adder)."""
        users: dict[str, User] = {}
        with open(path, newline="") as f:
            for number, record in enumerate(csv.reader(f), start=1):
                if not record:
                    continue
                if len(record) < 3:
                    raise TokenFileError(
                        f"token file '{path}' must have at least 3 columns (token, user name, "
                        f"user uid), found {len(record)}")
                token = record[0]
                if not token:
                    log.warning("empty token has been found in token file '%s', record "
                                "number '%d'", path, number)
                    continue
                if token in users:
                    log.warning("duplicate token has been found in token file '%s', record "
                                "number '%d'", path, number)
                groups = [g.strip() for g in record[3].split(",")] if len(record) > 3 else []
                groups = [g for g in groups if g]
                if AUTHENTICATED not in groups:
                    groups.append(AUTHENTICATED)
                users[token] = User(record[1], tuple(groups))
        return cls(users)

    def user(self, token: str) -> User | None:
        """The user of ``token`` (compared in constant time), else None."""
        found = None
        for known, user in self._users.items():
            if hmac.compare_digest(known.encode(), token.encode()):
                found = user
        return found
