"""What evaluators read and reset on a sim phone: ``sqlite3`` over the apps' databases,
``content delete`` on contacts and the call log, ``dumpsys telephony.registry``."""

from __future__ import annotations

import pytest

from farm.sim.phone import SimPhone
from farm.sim.spec import PhoneSpec

CONTACTS_DB = "/data/data/com.android.providers.contacts/databases/contacts2.db"
CALLLOG_DB = "/data/data/com.android.providers.contacts/databases/calllog.db"


@pytest.fixture
def phone() -> SimPhone:
    return SimPhone(PhoneSpec(name="data", seed=2))


async def sh(phone: SimPhone, line: str) -> tuple[int, str, str]:
    r = await phone.run_shell(line)
    return r.exit_code, r.stdout_bytes.decode(), r.stderr_bytes.decode()


async def test_sqlite_runs_real_sql_on_the_contacts_database(phone: SimPhone) -> None:
    assert await sh(phone, f'sqlite3 {CONTACTS_DB} "SELECT count(*) FROM raw_contacts;"') \
        == (0, "5\n", "")
    code, out, _ = await sh(phone, f"sqlite3 {CONTACTS_DB} \"SELECT display_name, data1 FROM "
                                   "data WHERE mimetype LIKE '%phone_v2' ORDER BY display_name "
                                   "DESC LIMIT 2;\"")
    assert (code, out) == (0, "Emma Wilson|+1 212-555-0105\nDavid Chen|+1 408-555-0104\n")
    code, out, _ = await sh(phone, f"sqlite3 -header -csv {CONTACTS_DB} "
                                   "'SELECT _id, display_name FROM contacts WHERE _id < 3'")
    assert out == "_id,display_name\n1,Alice Johnson\n2,Bob Smith\n"
    # what an app changed is what the next query sees
    await sh(phone, "content delete --uri content://com.android.contacts/raw_contacts "
                    "--where \"display_name='Bob Smith'\"")
    assert (await sh(phone, f'sqlite3 {CONTACTS_DB} "SELECT count(*) FROM contacts"'))[1] \
        == "4\n"


async def test_sqlite_errors_and_read_only_snapshot(phone: SimPhone) -> None:
    assert await sh(phone, f'sqlite3 {CONTACTS_DB} "SELECT * FROM nope"') == (
        1, "", "Error: no such table: nope\n")
    code, _, err = await sh(phone, f'sqlite3 {CONTACTS_DB} "DELETE FROM raw_contacts"')
    assert (code, err) == (1, "Error: attempt to write a readonly database\n")
    assert (await sh(phone, f'sqlite3 {CONTACTS_DB} "SELECT count(*) FROM raw_contacts"'))[1] \
        == "5\n"  # nothing was lost, and nothing pretended to be deleted
    assert (await sh(phone, f"sqlite3 {CONTACTS_DB} .tables"))[1] == \
        "contacts  data  raw_contacts\n"
    assert (await sh(phone, f"echo 'SELECT 1+1;' | sqlite3 {CALLLOG_DB}"))[1] == "2\n"
    assert (await sh(phone, "sqlite3 -bogus x.db"))[0] == 1


async def test_call_log_is_queried_and_cleared(phone: SimPhone) -> None:
    code, out, _ = await sh(phone, "content query --uri content://call_log/calls "
                                   "--projection number:type:name")
    assert code == 0 and out.count("Row: ") == 3
    assert "number=+1 650-555-0101, type=1, name=Alice Johnson" in out
    assert (await sh(phone, f'sqlite3 {CALLLOG_DB} "SELECT count(*) FROM calls WHERE '
                            'type = 3"'))[1] == "1\n"
    assert await sh(phone, "content delete --uri content://call_log/calls --where type=3") \
        == (0, "", "")
    assert (await sh(phone, "content query --uri content://call_log/calls"))[1].count(
        "Row: ") == 2
    assert await sh(phone, "content delete --uri content://call_log/calls") == (0, "", "")
    assert (await sh(phone, "content query --uri content://call_log/calls"))[1] == \
        "No result found.\n"
    code, _, err = await sh(phone, "content delete --uri content://com.android.contacts/data")
    assert code == 1 and "Cannot delete that URL" in err
    code, _, err = await sh(phone, "content delete --uri content://call_log/calls --where 'x=('")
    assert code == 1 and "SQLiteException" in err


async def test_contact_deleted_through_the_provider_leaves_the_contacts_app(
        phone: SimPhone) -> None:
    await sh(phone, "am start -n com.google.android.contacts/"
                    "com.android.contacts.activities.PeopleActivity")
    assert "Carol Martinez" in phone.world.ui_xml()
    await sh(phone, "content delete --uri content://com.android.contacts/contacts/3")
    assert "Carol Martinez" not in phone.world.ui_xml()


async def test_telephony_registry_reports_an_idle_line(phone: SimPhone) -> None:
    code, out, _ = await sh(phone, "dumpsys telephony.registry")
    assert code == 0 and "  mCallState=0\n" in out and "mServiceState=0(IN_SERVICE)" in out
