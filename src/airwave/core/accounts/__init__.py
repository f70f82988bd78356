"""Accounts: listeners, sessions, passwords and reset mails, anonymous listeners, throttling."""
