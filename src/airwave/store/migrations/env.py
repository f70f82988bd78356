"""Alembic environment: runs on the connection Database.migrate() hands over."""

from alembic import context

from airwave.store.db import include_name
from airwave.store.models import Base

connection = context.config.attributes["connection"]


context.configure(
    connection=connection,
    include_name=include_name,
    target_metadata=Base.metadata,
    render_as_batch=connection.dialect.name == "sqlite",
    transaction_per_migration=False,
)
with context.begin_transaction():
    context.run_migrations()
