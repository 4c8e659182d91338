"""The plan table: immutable saved plans.

Revision ID: 0001
Revises:
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "plan",
        sa.Column("id", sa.String(16), primary_key=True),
        sa.Column("kind", sa.String(20), nullable=False),
        sa.Column("request_json", sa.Text(), nullable=False),
        sa.Column("result_z", sa.LargeBinary(), nullable=False),
        sa.Column("gpuplan_version", sa.String(40), nullable=False),
        sa.Column("catalog_version", sa.String(40), nullable=False),
        sa.Column("title", sa.String(200), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), nullable=False),
    )
    op.create_index("ix_plan_created_at", "plan", ["created_at"])


def downgrade() -> None:
    op.drop_index("ix_plan_created_at", "plan")
    op.drop_table("plan")
