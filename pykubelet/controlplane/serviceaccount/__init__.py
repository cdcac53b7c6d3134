"""Service accounts: their JWTs, the signing key, TokenRequest and the token authenticator."""
