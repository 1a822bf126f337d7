"""A consumer of the controller's broker feed: its own durable queue, each event once, in order.

docs/amqp.md explains it line by line; tests/system/test_amqp_sink.py runs it against a real broker.

    python amqp_consumer.py --url amqp://user:pass@broker:5672/vhost --queue studio.feed \
        --bind 'table.*.round.*' --bind 'table.*.shoe.*' [--classic] [--until-seq N]

Prints one JSON line per event it had not seen (de-duplicated by message_id), and acks each
message only after that: a message it dies on is delivered again, never lost.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys

import aio_pika

EXCHANGE = "shoe.events"  # the controller's [[sink]] exchange


async def declare(
    channel: aio_pika.abc.AbstractChannel, args: argparse.Namespace
) -> aio_pika.abc.AbstractQueue:
    """The exchange as the controller declares it, and this consumer's own queue, bound."""
    exchange = await channel.declare_exchange(
        args.exchange, aio_pika.ExchangeType.TOPIC, durable=True
    )
    # A quorum queue is replicated across a broker cluster's nodes and survives one failing.
    arguments = {} if args.classic else {"x-queue-type": "quorum"}
    queue = await channel.declare_queue(args.queue, durable=True, arguments=arguments)
    for pattern in args.bind:
        await queue.bind(exchange, routing_key=pattern)
    return queue


async def consume(args: argparse.Namespace) -> None:
    connection = await aio_pika.connect_robust(args.url)  # reconnects by itself
    async with connection:
        channel = await connection.channel()
        await channel.set_qos(prefetch_count=100)
        queue = await declare(channel, args)
        if args.declare_only:
            return
        seen: set[str] = (
            set()
        )  # a real consumer keeps these with what it stores, in one transaction
        last_seq: dict[str, int] = {}  # the last seq handled, by table
        async with queue.iterator() as messages:
            async for message in messages:
                table = message.routing_key.split(".")[1]
                seq = message.headers["X-Shoe-Seq"]
                if message.message_id in seen:
                    await message.ack()  # sent again after a lost confirm: already handled
                    continue
                if seq != last_seq.get(table, 0) + 1:  # expected when bound to part of the feed
                    print(
                        f"table {table}: seq {seq} after {last_seq.get(table, 0)}", file=sys.stderr
                    )
                record = {
                    "routing_key": message.routing_key,
                    "message_id": message.message_id,
                    "persistent": message.delivery_mode == aio_pika.DeliveryMode.PERSISTENT,
                    "headers": dict(message.headers),
                    "event": json.loads(message.body),
                }
                print(json.dumps(record, ensure_ascii=False), flush=True)
                seen.add(message.message_id)
                last_seq[table] = seq
                await message.ack()
                if args.until_seq is not None and seq >= args.until_seq:
                    return


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--url", required=True)
    parser.add_argument("--exchange", default=EXCHANGE)
    parser.add_argument("--queue", required=True)
    parser.add_argument("--bind", action="append", default=[], help="routing key pattern")
    parser.add_argument("--classic", action="store_true", help="a classic queue, not quorum")
    parser.add_argument("--declare-only", action="store_true")
    parser.add_argument("--until-seq", type=int, help="stop after this seq (tests)")
    args = parser.parse_args()
    if not args.bind:
        args.bind = ["table.#"]
    asyncio.run(consume(args))


if __name__ == "__main__":
    main()
