# The references of ImageResizeTest: PIL's own bilinear resize (what torchvision's
# RandomResizedCrop and Resize call on PIL images) of a 37 x 29 image defined by a formula.
from PIL import Image
W, H = 37, 29
img = Image.new("RGB", (W, H))
for y in range(H):
    for x in range(W):
        img.putpixel((x, y), ((x * 7 + y * 13) % 256, (x * x + 3 * y) % 256, (x * y * 5 + 11) % 256))
def hexof(im):
    return bytes(v for px in im.getdata() for v in px).hex()
crop = img.crop((5, 3, 5 + 25, 3 + 20))
print("down", hexof(crop.resize((8, 8), Image.BILINEAR)))
print("up", hexof(crop.resize((40, 40), Image.BILINEAR)))
# torchvision's evaluation recipe at size 12: Resize(13) -> 16 x 13, CenterCrop(12) at (2, 0).
print("eval", hexof(img.resize((16, 13), Image.BILINEAR).crop((2, 0, 14, 12))))
