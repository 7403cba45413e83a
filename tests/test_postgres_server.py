"""The throwaway PostgreSQL server of tests/postgres.py: it runs, and takes awkward names."""

import pytest
from postgres import NO_PSYCOPG

psycopg = pytest.importorskip("psycopg", reason=NO_PSYCOPG)
sql = psycopg.sql


def test_server_is_postgresql_14_or_later(postgres_url):
    with psycopg.connect(postgres_url) as conn:
        version = conn.execute("SELECT version()").fetchone()[0]
        assert conn.info.server_version // 10000 >= 14
    assert version.startswith("PostgreSQL ")
    assert int(version.split()[1].split(".")[0]) >= 14


def test_awkward_column_names_round_trip(pg_conn):
    columns = ["select", "Zip Code", 'na"me']
    table = sql.Identifier("people")
    pg_conn.execute(sql.SQL("CREATE TABLE {} ({})").format(
        table, sql.SQL(", ").join(sql.SQL("{} text").format(sql.Identifier(c)) for c in columns)))
    row = ("yes", "12345", "O'Brien \"Bob\"")
    pg_conn.execute(sql.SQL("INSERT INTO {} ({}) VALUES (%s, %s, %s)").format(
        table, sql.SQL(", ").join(map(sql.Identifier, columns))), row)
    cursor = pg_conn.execute(sql.SQL("SELECT {} FROM {}").format(
        sql.SQL(", ").join(map(sql.Identifier, columns)), table))
    assert [d.name for d in cursor.description] == columns
    assert cursor.fetchall() == [row]
