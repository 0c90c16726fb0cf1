"""The media family: images in (view_image) and, later, out (generate_image), and their config."""
