"""Set-up shared by the test modules (importable because pytest puts ``tests/`` on the path
for the root conftest): ``cli`` runs ``oopav`` as a user does, ``events`` builds the events
tests seed streams with, ``waits`` polls with a deadline, ``handlers`` runs handlers for the
length of a block, ``openai_api`` answers like a chat-completions server. docs/testing.md lists
them with the fixtures."""
