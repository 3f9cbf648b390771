"""The credentials a served tool asks the user for: OAuth sign-ins and the secret-entry page.

A tool's `request_credential` answered (`credential_requests`); the sign-ins it starts (`sign_ins`), their records,
pending state and token requests, and the endpoints of OpenID Connect by discovery URL (`openid_discovery`); the
sign-in link that binds a browser, the gateway's own login behind it, the pages, and the loopback callback listener
for a server with no HTTP front.
"""
