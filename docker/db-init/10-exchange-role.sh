# The exchange's own database role, made once when the database is initialised (the postgres
# image sources /docker-entrypoint-initdb.d/*.sh): it owns the database, so it creates and owns
# the exchange's tables, and may end a stale writer's session (pg_signal_backend), and it is no
# superuser (docs/OPERATIONS.md "The database role"). Its password: EXCHANGE_DB_PASSWORD.
psql -v ON_ERROR_STOP=1 --username "$POSTGRES_USER" --no-password --no-psqlrc \
  --dbname "$POSTGRES_DB" --set pw="${EXCHANGE_DB_PASSWORD:-exchange}" \
  --set db="$POSTGRES_DB" <<'SQL'
CREATE ROLE exchange LOGIN PASSWORD :'pw';
GRANT pg_signal_backend TO exchange;
ALTER DATABASE :"db" OWNER TO exchange;
SQL
