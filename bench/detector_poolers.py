"""Mask R-CNN's RoI poolers alone, torchvision's and pyroi's, on the inputs the model gives
them: process CPU time of the box and mask poolers together in an eval forward and in a train
step (forward + backward), in the model's order (eval: box, mask; train: box, mask, then the
backward of both), torchvision and pyroi alternating, medians.

    python bench/detector_poolers.py --size 512 --batch 2 --threads 1 2 --repeat 7

The inputs are captured from one eval forward and one train forward of torchvision's model
(random weights from a fixed seed, as pyroi bench --model). Without the rest of the model
between calls the figures are steadier than the in-model hooks of bench/detector.py on a
shared machine; the pooled rows and gradient maps have the model's sizes, so pyroi's result
memory behaves as in the model's eval / train alternation.
"""

import argparse
import os
import statistics
import time

import torch
import torchvision

import pyroi.torch
from pyroi import detector_bench


def capture(size, batch_size):
    """{(pooler, step): (features, boxes, image_shapes)} from the original model."""
    model, _ = detector_bench.build("maskrcnn", size)
    images, targets = detector_bench.batch(size, batch_size, True)
    captured, step = {}, ["eval"]
    for name in ("box", "mask"):
        def keep(module, args, name=name):
            features, boxes, shapes = args
            captured[name, step[0]] = ({k: v.detach().clone() for k, v in features.items()},
                                       [b.detach().clone() for b in boxes], list(shapes))
        getattr(model.roi_heads, f"{name}_roi_pool").register_forward_pre_hook(keep)
    model.eval()
    with torch.no_grad():
        model(images)
    step[0] = "train"
    model.train()
    torch.manual_seed(2)
    model(images, targets)
    return captured


def poolers(names):
    """{pooler: (torchvision's, pyroi's)} with Mask R-CNN's parameters."""
    made = {}
    for name, output_size in (("box", 7), ("mask", 14)):
        original = torchvision.ops.MultiScaleRoIAlign(names, output_size, 2)
        made[name] = (original, pyroi.torch.convert(
            torchvision.ops.MultiScaleRoIAlign(names, output_size, 2)))
    return made


def one_round(made, captured, which):
    """CPU seconds of (eval forward, train forward + backward) for made[*][which]."""
    clock = time.process_time
    seconds = 0.0
    with torch.no_grad():
        for name in ("box", "mask"):
            features, boxes, shapes = captured[name, "eval"]
            started = clock()
            pooled = made[name][which](features, boxes, shapes)
            seconds += clock() - started
            del pooled
    evaluation, seconds = seconds, 0.0
    outputs, gradients = [], []
    for name in ("box", "mask"):
        features, boxes, shapes = captured[name, "train"]
        features = {k: v.clone().requires_grad_(True) for k, v in features.items()}
        started = clock()
        outputs.append(made[name][which](features, boxes, shapes))
        seconds += clock() - started
        gradients.append(torch.ones_like(outputs[-1]))
    started = clock()
    torch.autograd.backward(outputs[::-1], gradients[::-1])
    return evaluation, seconds + clock() - started


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--size", type=int, default=512)
    parser.add_argument("--batch", type=int, default=2)
    parser.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--repeat", type=int, default=7)
    args = parser.parse_args(argv)
    captured = capture(args.size, args.batch)
    made = poolers(list(next(iter(captured.values()))[0])[:4])
    print(f"Mask R-CNN poolers, batch {args.batch}, {args.size} px; CPU: "
          f"{detector_bench.cpu_model()}; load average before: {detector_bench.load_average()}")
    print("| threads | step | torchvision CPU | pyroi CPU | speed-up |\n|---|---|---|---|---|")
    for threads in args.threads:
        torch.set_num_threads(threads)
        runs = ([], [])
        for repetition in range(args.repeat + 1):  # the first round warms up
            for which in (0, 1):
                seconds = one_round(made, captured, which)
                if repetition:
                    runs[which].append(seconds)
        for i, step in enumerate(("eval forward", "train step")):
            theirs, ours = (statistics.median(r[i] for r in runs[w]) for w in (0, 1))
            print(f"| {threads} | {step} | {1000 * theirs:.0f} ms | {1000 * ours:.0f} ms | "
                  f"{theirs / ours:.1f}x |", flush=True)
    print(f"load average after: {detector_bench.load_average()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
