"""Times the MLPerf 3D-UNet training step in PyTorch eager on the CPU: the same step as
`scripts/run step-time` (synthetic batch, forward, Dice + cross-entropy loss, backward, SGD with
momentum), for comparing the project's DJL step against plain PyTorch on this machine.

    /usr/bin/python3 scripts/torch_step.py --patch 64 --width 1.0 --batch 2 --repeats 3

Prints the table `step-time` prints: one line a patch, median, min and max ms of the timed steps
after one untimed warm-up step, the medians of the step's phases (copy, forward with the loss,
backward, update with the gradients' zeroing; the batch is already where the model is, so the copy
is 0) and the process's peak resident set over the timed steps in MB (Linux's VmHWM, reset after
the warm-up). Uses every core of the machine (torch's default on some builds is one thread).

The model and loss are those of the MLPerf reference as the MinatoLoader artifact ships them
(github.com/Rahm-no/MinatoLoader, PyTorch/model/{unet3d,layers,losses}.py, from
mlcommons/training image_segmentation/pytorch, Apache 2.0), reduced to what training with
instance norm and ReLU uses, with the project's width factor on the filters.
"""

import argparse
import os
import statistics
import sys
import time

import torch
import torch.nn as nn
import torch.nn.functional as F

FULL_WIDTH_FILTERS = [32, 64, 128, 256, 320]


def conv_block(in_channels, out_channels, kernel_size=3, stride=1, padding=1, transpose=False):
    """layers.conv_block_factory: conv (bias only without a norm), instance norm, ReLU."""
    if transpose:
        # The up-sampling: norm_type "none", activation "none", so a bias and nothing after.
        return nn.Sequential(nn.ConvTranspose3d(in_channels, out_channels, kernel_size=kernel_size,
                                                stride=stride, padding=padding, bias=True))
    return nn.Sequential(
        nn.Conv3d(in_channels, out_channels, kernel_size=kernel_size, stride=stride,
                  padding=padding, bias=False),
        nn.InstanceNorm3d(out_channels, affine=True),
        nn.ReLU())


class DownsampleBlock(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.conv1 = conv_block(in_channels, out_channels, stride=2)
        self.conv2 = conv_block(out_channels, out_channels)

    def forward(self, x):
        return self.conv2(self.conv1(x))


class UpsampleBlock(nn.Module):
    def __init__(self, in_channels, out_channels):
        super().__init__()
        self.upsample_conv = conv_block(in_channels, out_channels, kernel_size=2, stride=2,
                                        padding=0, transpose=True)
        self.conv1 = conv_block(2 * out_channels, out_channels)
        self.conv2 = conv_block(out_channels, out_channels)

    def forward(self, x, skip):
        x = self.upsample_conv(x)
        x = torch.cat((x, skip), dim=1)
        return self.conv2(self.conv1(x))


class Unet3D(nn.Module):
    def __init__(self, in_channels=1, n_class=3, width=1.0):
        super().__init__()
        filters = [max(1, round(f * width)) for f in FULL_WIDTH_FILTERS]
        inp, out = filters[:-1], filters[1:]
        self.input_block = nn.Sequential(conv_block(in_channels, filters[0]),
                                         conv_block(filters[0], filters[0]))
        self.downsample = nn.ModuleList([DownsampleBlock(i, o) for i, o in zip(inp, out)])
        self.bottleneck = DownsampleBlock(filters[-1], filters[-1])
        upsample = [UpsampleBlock(filters[-1], filters[-1])]
        upsample.extend(UpsampleBlock(i, o) for i, o in zip(reversed(out), reversed(inp)))
        self.upsample = nn.ModuleList(upsample)
        self.output = nn.Conv3d(filters[0], n_class, kernel_size=1, stride=1, padding=0, bias=True)

    def forward(self, x):
        x = self.input_block(x)
        outputs = [x]
        for downsample in self.downsample:
            x = downsample(x)
            outputs.append(x)
        x = self.bottleneck(x)
        for upsample, skip in zip(self.upsample, reversed(outputs)):
            x = upsample(x, skip)
        return self.output(x)


def dice_ce_loss(logits, labels, n_class=3, smooth=1e-6):
    """losses.DiceCELoss(to_onehot_y=True, use_softmax=True, layout="NCDHW",
    include_background=False): (mean Dice loss + cross-entropy) / 2."""
    cross_entropy = F.cross_entropy(logits, torch.squeeze(labels, dim=1).long())
    prediction = torch.softmax(logits, dim=1)[:, 1:]
    target = F.one_hot(torch.squeeze(labels, dim=1).long(), num_classes=n_class)
    target = target.permute(0, 4, 1, 2, 3).float()[:, 1:]
    reduce_axis = list(range(2, logits.dim()))
    intersection = torch.sum(target * prediction, dim=reduce_axis)
    denominator = torch.sum(target, dim=reduce_axis) + torch.sum(prediction, dim=reduce_axis)
    dice = (2.0 * intersection + smooth) / (denominator + smooth)
    return (torch.mean(1.0 - dice) + cross_entropy) / 2


def synthetic_batch(batch, patch, generator):
    """Noise images with a labelled kidney-and-tumour slab, as step-time's synthetic batch."""
    z = torch.arange(patch).reshape(patch, 1, 1).expand(patch, patch, patch)
    inside = (z >= patch // 4) & (z < 3 * patch // 4)
    index = torch.arange(patch ** 3).reshape(patch, patch, patch)
    label = torch.where(inside, torch.where(index % 5 == 0, 2, 1), 0).to(torch.uint8)
    images, labels = [], []
    for _ in range(batch):
        noise = torch.randn(patch, patch, patch, generator=generator) * 0.3
        images.append(torch.where(inside, 1.0, -1.0) + noise)
        labels.append(label)
    return (torch.stack(images).unsqueeze(1).float(), torch.stack(labels).unsqueeze(1))


def reset_peak_memory():
    """Resets Linux's peak resident set of this process (VmHWM); False where refused."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def peak_memory_mb():
    """The process's peak resident set in MB (VmHWM); 0 where it cannot be read."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) // 1024
    except OSError:
        pass
    return 0


def time_patch(args, patch):
    """Each timed step's ms, each phase's median ms, and the peak MB over the timed steps."""
    torch.manual_seed(args.seed)
    model = Unet3D(width=args.width).train()
    optimizer = torch.optim.SGD(model.parameters(), lr=args.lr, momentum=args.momentum)
    x, y = synthetic_batch(args.batch, patch, torch.Generator().manual_seed(1))
    ms = []
    phases = {"forward": [], "backward": [], "update": []}
    for step in range(args.repeats + 1):  # the first step pays one-time costs, untimed
        if step == 1:
            reset_peak_memory()
        start = time.perf_counter()
        loss = dice_ce_loss(model(x), y)
        forward = time.perf_counter()
        loss.backward()
        backward = time.perf_counter()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        loss.item()
        end = time.perf_counter()
        if step > 0:
            ms.append((end - start) * 1000)
            phases["forward"].append((forward - start) * 1000)
            phases["backward"].append((backward - forward) * 1000)
            phases["update"].append((end - backward) * 1000)
    return ms, {name: statistics.median(v) for name, v in phases.items()}, peak_memory_mb()


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--patch", default="64", help="patch edges, comma-separated (default 64)")
    parser.add_argument("--width", type=float, default=1.0)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--lr", type=float, default=0.1, help="the kits19 workload's rate")
    parser.add_argument("--momentum", type=float, default=0.9)
    parser.add_argument("--seed", type=int, default=42)
    parser.add_argument("--threads", type=int, default=os.cpu_count())
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    print(f"torch {torch.__version__}, {torch.get_num_threads()} threads", file=sys.stderr)
    print(f"{'width':<6} {'patch':<6} {'batch':<6} {'median ms':>10} {'min ms':>10} {'max ms':>10}"
          f" {'copy':>8} {'forward':>8} {'backward':>8} {'update':>8} {'peak MB':>8}")
    for patch in (int(p) for p in args.patch.split(",")):
        if patch < 64 or patch % 32:
            # At 32 the bottleneck is one voxel, which PyTorch's InstanceNorm3d refuses in training.
            parser.error(f"--patch {patch} must be a multiple of 32, at least 64")
        ms, phases, peak = time_patch(args, patch)
        print(f"{args.width:<6} {patch:<6} {args.batch:<6} {round(statistics.median(ms)):>10} "
              f"{round(min(ms)):>10} {round(max(ms)):>10} {0.0:>8.1f} {phases['forward']:>8.1f} "
              f"{phases['backward']:>8.1f} {phases['update']:>8.1f} {peak:>8}", flush=True)


if __name__ == "__main__":
    main()
