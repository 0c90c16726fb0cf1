"""A browser screenshot reaches a model as an image (the loop sends what `ToolSpec.images` names)."""

from __future__ import annotations

from fermix_cli.core.registry import default_registry


def test_a_screenshot_result_carries_its_file_and_nothing_else_does() -> None:
    spec = default_registry().get("browser")
    assert spec is not None
    shot = {"path": "/m/shot.png", "format": "png", "bytes": 10, "device_pixel_ratio": 1}
    assert spec.result_images(shot) == ("/m/shot.png",)
    assert spec.result_images({**shot, "format": "jpeg", "path": "/m/s.jpg"}) == ("/m/s.jpg",)
    assert spec.result_images({"path": "/m/page.pdf", "bytes": 3, "url": "http://x/"}) == ()
    assert spec.result_images({"tabs": []}) == ()
