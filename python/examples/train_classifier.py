#!/usr/bin/env python3
"""Trains an image classifier in PyTorch on a folder of class folders (DIR/<class>/<image>), fed by
minato-flink or by PyTorch's own DataLoader with torchvision's ImageNet training transforms, and
writes a report with the fields of the job's own `train` report.

  --loader minato   batches from the job (--workload images, started here through scripts/run /
                    MINATO_LAUNCHER): decoded with the JDK's readers, prepared as torchvision's
                    recipe, decoded images remembered across epochs (--cache-memory 0: never)
  --loader torch    torch.utils.data.DataLoader over the same images: PIL decodes, then
                    RandomResizedCrop, RandomHorizontalFlip, ColorJitter(0.4, 0.4, 0.4),
                    ToTensor and Normalize (needs torchvision)

Both train the same images: the folder read as the job reads it, and --eval-cases N held out as
the job holds them out (in turn over the classes, each class's last image). Under torchrun every
rank trains on its own device queue (DDP: gloo on the CPU, NCCL on GPUs). --step-ms MS replaces
the model's step by a sleep of MS ms: the loader measured alone.
"""
import argparse
import os
import sys
import time

import torch

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(HERE, os.pardir))

import training_loop  # noqa: E402

# The job's ImageFolder.EXTENSIONS: torchvision's, and GIF.
EXTENSIONS = {"jpg", "jpeg", "png", "ppm", "bmp", "pgm", "tif", "tiff", "webp", "gif"}
MEAN, STD = (0.485, 0.456, 0.406), (0.229, 0.224, 0.225)


def parse_args(argv=None):
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    training_loop.add_common_options(
        ap, "preparation workers: the job's --workers, or the DataLoader's num_workers")
    ap.add_argument("--data", required=True, help="folder of class folders of images")
    ap.add_argument("--crop", "--patch", type=int, default=224,
                    help="edge of the square crop (the job's --patch)")
    ap.add_argument("--eval-cases", type=int, default=0,
                    help="images held out, spread over the classes as the job holds them out")
    ap.add_argument("--network", choices=("cnn2d", "resnet18"), default="cnn2d",
                    help="cnn2d: the job's small CNN; resnet18: torchvision's")
    ap.add_argument("--lr", type=float, default=0.01)
    ap.add_argument("--cache-memory", type=int,
                    help="MB of decoded images the job keeps (minato; 0: decode every epoch)")
    a = ap.parse_args(argv)
    training_loop.check_common_options(ap, a, "crop")
    if a.eval_cases < 0:
        ap.error("--eval-cases must be >= 0")
    return a


def is_image_name(name):
    dot = name.rfind(".")
    return dot > 0 and name[dot + 1:].lower() in EXTENSIONS


def scan(data):
    """(classes, [(relative name, path, label)]) as the job's ImageFolder.scan reads the folder:
    classes by sorted folder name, images sorted by name within a class, hidden files and other
    types left out, deeper folders not read."""
    if not os.path.isdir(data):
        sys.exit(f"error: {data}: no such folder; give --data a folder of class folders of images")
    classes = sorted(e.name for e in os.scandir(data) if e.is_dir() and not e.name.startswith("."))
    if not classes:
        sys.exit(f"error: {data}: no class folders; images go in DIR/<class>/<image>.jpg")
    images = []
    for label, cls in enumerate(classes):
        names = sorted(e.name for e in os.scandir(os.path.join(data, cls))
                       if e.is_file() and not e.name.startswith(".") and is_image_name(e.name))
        if not names:
            sys.exit(f"error: {os.path.join(data, cls)}: class folder holds no image")
        images += [(f"{cls}/{n}", os.path.join(data, cls, n), label) for n in names]
    return classes, images


def split(classes, images, held):
    """(the images to train on, in name order; those held out, in name order), holding `held` out
    as the job's ImageFolder.split does: in turn over the classes, the last image of each that
    keeps one."""
    by_class = [[] for _ in classes]
    for im in images:
        by_class[im[2]].append(im)
    spare = sum(max(0, len(b) - 1) for b in by_class)
    if held > spare:
        sys.exit(f"error: cannot hold out {held} of {len(images)} images for evaluation; every "
                 f"class must keep one to train on (at most {spare})")
    held_out = []
    while len(held_out) < held:
        for b in by_class:
            if len(held_out) < held and len(b) > 1:
                held_out.append(b.pop())
    by_name = lambda im: im[0]  # noqa: E731
    return sorted((im for b in by_class for im in b), key=by_name), sorted(held_out, key=by_name)


class ImageTrain(torch.utils.data.Dataset):
    """torchvision's ImageNet training recipe over the listed images, timing each sample's CPU."""

    def __init__(self, images, crop):
        from torchvision import transforms as T
        self.images = images
        self.transform = T.Compose([
            T.RandomResizedCrop(crop), T.RandomHorizontalFlip(),
            T.ColorJitter(0.4, 0.4, 0.4), T.ToTensor(), T.Normalize(MEAN, STD)])

    def __len__(self):
        return len(self.images)

    def __getitem__(self, idx):
        from PIL import Image
        c0 = time.thread_time()
        _, path, label = self.images[idx]
        with open(path, "rb") as f:
            image = Image.open(f).convert("RGB")  # torchvision's pil_loader
        return self.transform(image), label, training_loop.sample_meta(idx, c0)


def torch_batches(a, ranks, images):
    """PyTorch's DataLoader: fixed batches in order, shuffled per epoch, drop_last."""
    ds = ImageTrain(images, a.crop)
    sampler = torch.utils.data.distributed.DistributedSampler(
        ds, num_replicas=ranks.size, rank=ranks.rank, shuffle=True, seed=a.seed, drop_last=True)
    dl = torch.utils.data.DataLoader(ds, batch_size=a.batch, sampler=sampler, drop_last=True,
                                     num_workers=a.workers, pin_memory=ranks.cuda,
                                     persistent_workers=True)
    return training_loop.dataloader_batches(a, dl, sampler, lambda i: images[i][0])


def accuracy(model, images, crop, device):
    """Top-1 accuracy on `images` with torchvision's evaluation recipe (the shorter side resized
    to crop * 256 / 224, the centre crop x crop, normalised), as the job scores its own."""
    from PIL import Image
    from torchvision import transforms as T
    transform = T.Compose([T.Resize(crop * 256 // 224), T.CenterCrop(crop), T.ToTensor(),
                           T.Normalize(MEAN, STD)])
    model.eval()
    correct = 0
    with torch.no_grad():
        for start in range(0, len(images), 32):
            chunk = images[start:start + 32]
            x = torch.stack([transform(Image.open(path).convert("RGB")) for _, path, _ in chunk])
            labels = torch.tensor([label for _, _, label in chunk])
            correct += int((model(x.to(device)).argmax(1).cpu() == labels).sum())
    model.train()
    return {"accuracy": {"top1": round(correct / len(images), 4), "images": len(images)}}


def small_cnn(classes, width=1.0):
    """The job's cnn2d: three stages of two 3x3 convolutions (16-32-64 channels x width) with
    ReLU and 2x2 max pooling, global average pooling, a linear layer."""
    layers, channels = [], 3
    for stage in range(3):
        out = max(1, round(16 * (1 << stage) * width))
        for _ in range(2):
            layers += [torch.nn.Conv2d(channels, out, 3, padding=1), torch.nn.ReLU()]
            channels = out
        layers.append(torch.nn.MaxPool2d(2))
    return torch.nn.Sequential(*layers, torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(),
                               torch.nn.Linear(channels, classes))


def main(argv=None):
    a = parse_args(argv)
    classes, images = scan(a.data)
    ranks = training_loop.Ranks(a)
    step = None
    if a.step_ms is None:
        if a.network == "resnet18":
            import torchvision
            net = torchvision.models.resnet18(num_classes=len(classes))
        else:
            net = small_cnn(len(classes))
        model = ranks.parallel(net)
        opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)

        def step(image, label):
            loss = torch.nn.functional.cross_entropy(model(image), label)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            opt.step()
            return loss

    extra = ["--workload", "images", "--eval-cases", str(a.eval_cases)]
    if a.cache_memory is not None:
        extra += ["--cache-memory", str(a.cache_memory)]
    train_images, held_out = split(classes, images, a.eval_cases)
    score = None
    if step is not None and held_out:
        def score():  # on rank 0 alone: the model without DDP, which would sync its buffers
            return accuracy(getattr(model, "module", model), held_out, a.crop, ranks.device)
    training_loop.train(
        a, ranks, lambda: torch_batches(a, ranks, train_images), (a.data, a.crop, extra), step,
        {"crop": a.crop, "network": a.network}, score)
    ranks.close()


if __name__ == "__main__":
    training_loop.main(main)
