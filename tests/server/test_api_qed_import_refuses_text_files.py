"""``POST /api/qed/import/`` refuses what its schema refuses: ``ops`` or ``e2e`` sent as a text
field (the schema says a file), or a multipart part without a name (a body that is not an object),
is a 400, not an import of the server's copy that ignores it."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


@pytest.mark.parametrize("body", [{"ops": "0"}, {"e2e": "not a file"}, {"ops": ""}])
def test_a_text_field_where_a_file_goes_is_a_400(api: Any, body: dict[str, str]) -> None:
    from server.devices.models import Device

    response = api.post("/api/qed/import/", body, format="multipart")
    assert response.status_code == 400, response.content
    assert set(response.json()) == set(body)
    assert not Device.objects.filter(kind="imported").exists()


def test_a_json_body_naming_a_file_is_a_400(api: Any) -> None:
    response = api.post("/api/qed/import/", {"ops": 5}, format="json")
    assert response.status_code == 400 and list(response.json()) == ["ops"]


def test_a_multipart_part_without_a_name_is_a_400_an_empty_form_imports(api: Any) -> None:
    from server.devices.models import Device

    boundary = "a222103b9b30b1f9e8be6882ecedb1d2"
    content_type = f"multipart/form-data; boundary={boundary}"
    # A JSON array sent as multipart: one part, no headers. Django skips it, which read as "no files".
    nameless = f"--{boundary}\r\n[]--{boundary}--\r\n"
    response = api.generic("POST", "/api/qed/import/", nameless, content_type=content_type)
    assert response.status_code == 400 and "without a form-data name" in response.json()["detail"]
    assert not Device.objects.filter(kind="imported").exists()
    # An empty form is no files: the server's copy.
    response = api.generic("POST", "/api/qed/import/", f"--{boundary}--\r\n", content_type=content_type)
    assert response.status_code == 200, response.content
