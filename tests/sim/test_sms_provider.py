"""The SMS provider (com.android.providers.telephony): `content query|insert|update|
delete` on content://sms and its boxes with AOSP's columns, the same rows through
`sqlite3 …/mmssms.db`, `pm clear` back to the seed — what android_world's SMS tasks read
and write."""

from __future__ import annotations

import pytest

from farm.sim.phone import SimPhone
from farm.sim.spec import PhoneSpec
from farm.sim.world.apps.telephony_provider import PKG, SmsProvider
from tests.sim.test_ime import sh

DB = "/data/data/com.android.providers.telephony/databases/mmssms.db"


@pytest.fixture
async def phone() -> SimPhone:
    return SimPhone(PhoneSpec(name="sms", seed=2))


async def test_boxes_columns_and_sqlite_agree(phone: SimPhone) -> None:
    code, out, _ = await sh(phone, "content query --uri content://sms/inbox "
                                   "--projection address:body:type:read")
    assert code == 0 and out.count("Row: ") == 3
    assert "address=+14155550103, body=Your appointment is confirmed for Monday 9 AM., " \
           "type=1, read=0" in out
    sent = (await sh(phone, "content query --uri content://sms/sent"))[1]
    assert sent.count("Row: ") == 1 and "thread_id=1" in sent and "type=2" in sent
    assert (await sh(phone, "content query --uri content://sms/2 --projection body"))[1] == \
        "Row: 0 body=Yes, 12:30 at the usual place.\n"
    assert (await sh(phone, f'sqlite3 {DB} "SELECT count(*) FROM sms WHERE type = 1 AND '
                            'read = 0"'))[1] == "3\n"
    code, _, err = await sh(phone, "content query --uri content://sms/bogus")
    assert code == 1 and "IllegalArgumentException: Unknown URL content://sms/bogus" in err


async def test_insert_update_delete_and_clear(phone: SimPhone) -> None:
    assert (await sh(phone, "content insert --uri content://sms/sent --bind "
                            "address:s:+16505550102 --bind 'body:s:On my way'"))[0] == 0
    out = (await sh(phone, "content query --uri content://sms/sent --projection "
                           "address:body:type:thread_id"))[1]
    assert "address=+16505550102, body=On my way, type=2, thread_id=4" in out
    assert (await sh(phone, "content update --uri content://sms/inbox --bind read:i:1 "
                            "--where \"address='+14155550103'\""))[0] == 0
    assert (await sh(phone, f'sqlite3 {DB} "SELECT read FROM sms WHERE address = '
                            "'+14155550103'\""))[1] == "1\n"
    assert (await sh(phone, "content delete --uri content://sms --where type=2"))[0] == 0
    assert (await sh(phone, "content query --uri content://sms/sent"))[1] == \
        "No result found.\n"
    code, _, err = await sh(phone, "content insert --uri content://sms --bind nope:s:x")
    assert code == 1 and "no column named nope" in err
    await sh(phone, f"pm clear {PKG}")
    assert (await sh(phone, "content query --uri content://sms"))[1].count("Row: ") == 4


async def test_an_incoming_message_lands_unread_in_the_inbox(phone: SimPhone) -> None:
    provider = phone.world.app(PKG)
    assert isinstance(provider, SmsProvider)
    provider.receive("+15550001111", "Your code is 482913")
    out = (await sh(phone, "content query --uri content://sms/inbox --where read=0 "
                           "--projection address:body"))[1]
    assert "address=+15550001111, body=Your code is 482913" in out
