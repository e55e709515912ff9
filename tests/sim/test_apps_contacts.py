"""Contacts: seed list, create/edit/delete through the UI, checked via ``content query``."""

from __future__ import annotations

from tests.sim.apps_driver import Droid

PKG = "com.google.android.contacts"
R = f"{PKG}:id/"
CONTACTS = "content://com.android.contacts/contacts"
DATA = "content://com.android.contacts/data"


async def fill(d: Droid, hint: str, text: str) -> None:
    await d.tap(text=hint, class_name="android.widget.EditText")
    await d.type(text)


async def test_seed_contacts() -> None:
    d = Droid()
    out = await d.sh(f"content query --uri {CONTACTS} --projection _id:display_name")
    assert out.splitlines() == [
        "Row: 0 _id=1, display_name=Alice Johnson", "Row: 1 _id=2, display_name=Bob Smith",
        "Row: 2 _id=3, display_name=Carol Martinez", "Row: 3 _id=4, display_name=David Chen",
        "Row: 4 _id=5, display_name=Emma Wilson"]
    await d.tap(text="Contacts", content_desc="Contacts")
    assert d.focus() == (PKG, "com.android.contacts.activities.PeopleActivity")
    assert d.texts(f"{R}cliv_name_textview") == ["Alice Johnson", "Bob Smith", "Carol Martinez",
                                                 "David Chen", "Emma Wilson"]


async def test_add_contact_and_query_it() -> None:
    d = Droid()
    await d.launch(PKG)
    await d.tap(content_desc="Create contact")
    assert d.get(resource_id=f"{R}title").text == "Create contact"
    await fill(d, "First name", "John")
    await fill(d, "Last name", "Doe")
    await fill(d, "Phone", "(650) 555-1234")
    await fill(d, "Email", "john.doe@example.com")
    await d.tap(resource_id=f"{R}editor_menu_save_button")
    assert d.focus() == (PKG, "com.android.contacts.quickcontact.QuickContactActivity")
    assert d.get(resource_id=f"{R}large_title").text == "John Doe"
    out = await d.sh(f"content query --uri {CONTACTS} --projection _id:display_name:"
                     "has_phone_number --where \"display_name='John Doe'\"")
    assert out == "Row: 0 _id=6, display_name=John Doe, has_phone_number=1\n"
    out = await d.sh(f"content query --uri {DATA} --projection mimetype:data1:data2:data4 "
                     "--where 'contact_id=6'")
    assert out.splitlines() == [
        "Row: 0 mimetype=vnd.android.cursor.item/name, data1=John Doe, data2=John, data4=NULL",
        "Row: 1 mimetype=vnd.android.cursor.item/phone_v2, data1=(650) 555-1234, data2=2, "
        "data4=+16505551234",
        "Row: 2 mimetype=vnd.android.cursor.item/email_v2, data1=john.doe@example.com, "
        "data2=1, data4=NULL"]
    phones = await d.sh(f"content query --uri {DATA}/phones --projection display_name:data1 "
                        "--where \"display_name LIKE 'john%'\"")
    assert phones == "Row: 0 display_name=John Doe, data1=(650) 555-1234\n"
    # back on the list, the new contact is there and search finds it
    await d.key("KEYCODE_BACK")
    assert "John Doe" in d.texts(f"{R}cliv_name_textview")
    await d.tap(text="Search contacts")
    await d.type("doe")
    assert d.texts(f"{R}cliv_name_textview") == ["John Doe"]


async def test_edit_star_and_delete() -> None:
    d = Droid()
    await d.launch(PKG)
    await d.tap(text="Bob Smith")
    await d.tap(content_desc="Add to favorites")
    await d.tap(content_desc="Edit contact")
    assert d.get(resource_id=f"{R}title").text == "Edit contact"
    phone = d.get(resource_id=f"{R}phone")
    assert phone.text == "+1 650-555-0102"
    await d.tap(resource_id=f"{R}phone")
    for _ in range(4):
        await d.key("KEYCODE_DEL")
    await d.type("9999")
    await d.tap(text="Save")
    assert d.get(resource_id=f"{R}header").text == "+1 650-555-9999"
    out = await d.sh(f"content query --uri {CONTACTS}/2 --projection display_name:starred")
    assert out == "Row: 0 display_name=Bob Smith, starred=1\n"
    await d.tap(content_desc="Delete")
    assert d.get(resource_id="android:id/alertTitle").text == "Delete this contact?"
    await d.tap(resource_id="android:id/button1")
    assert d.focus() == (PKG, "com.android.contacts.activities.PeopleActivity")
    assert "Bob Smith" not in d.texts(f"{R}cliv_name_textview")
    assert await d.sh(f"content query --uri {CONTACTS} --where '_id=2'") == \
        "No result found.\n"


async def test_pm_clear_of_the_provider_resets_contacts() -> None:
    d = Droid("small")
    await d.launch(PKG)
    await d.tap(content_desc="Create contact")
    await fill(d, "First name", "Zed")
    await d.tap(text="Save")
    count = "content query --uri content://com.android.contacts/raw_contacts --projection _id"
    assert len((await d.sh(count)).splitlines()) == 6
    # the app's own data is not where contacts live (as on Android)
    assert await d.sh(f"pm clear {PKG}") == "Success\n"
    assert len((await d.sh(count)).splitlines()) == 6
    assert await d.sh("pm clear com.android.providers.contacts") == "Success\n"
    assert len((await d.sh(count)).splitlines()) == 5


async def test_empty_save_discards() -> None:
    d = Droid()
    await d.launch(PKG)
    await d.tap(content_desc="Create contact")
    await d.tap(text="Save")
    assert d.focus() == (PKG, "com.android.contacts.activities.PeopleActivity")
    assert len(d.texts(f"{R}cliv_name_textview")) == 5
