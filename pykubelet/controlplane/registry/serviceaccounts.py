"""ServiceAccounts (pkg/registry/core/serviceaccount): plain namespaced objects; what they
are for is their ``token`` subresource (the TokenRequest, served by
:mod:`pykubelet.controlplane.serviceaccount.tokenrequest`)."""

from __future__ import annotations

from pykubelet.controlplane.registry.resources import SERVICE_ACCOUNTS
from pykubelet.controlplane.registry.strategy import Strategy


class ServiceAccountStrategy(Strategy):
    info = SERVICE_ACCOUNTS
