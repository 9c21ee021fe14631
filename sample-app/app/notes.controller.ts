import { BadRequestException, Body, Controller, Get, Post, type OnModuleInit } from '@nestjs/common';
import type pg from 'pg';
import { InjectPool, UsePooled, type ConnectionPool } from 'nestjs-shared-pool';

/** Notes in PostgreSQL: the exclusive case, one query per client at a time (clientLimit 1). */
@Controller('notes')
export class NotesController implements OnModuleInit {
  constructor(@InjectPool('pg') private readonly pg: ConnectionPool<pg.Client>) {}

  @UsePooled('pg')
  async onModuleInit(): Promise<void> {
    await this.pg.current.query(
      'CREATE TABLE IF NOT EXISTS sample_notes (id serial PRIMARY KEY, text text NOT NULL, at timestamptz NOT NULL DEFAULT now())',
    );
  }

  @Post()
  @UsePooled('pg')
  async add(@Body() body: { text?: unknown }) {
    if (typeof body?.text !== 'string' || body.text === '')
      throw new BadRequestException('send JSON: { "text": "a note" }');
    const { rows } = await this.pg.current.query<{ id: number }>(
      'INSERT INTO sample_notes (text) VALUES ($1) RETURNING id',
      [body.text],
    );
    return { id: rows[0].id, text: body.text };
  }

  @Get()
  @UsePooled('pg')
  async latest() {
    const { rows } = await this.pg.current.query<{ id: number; text: string }>(
      'SELECT id, text FROM sample_notes ORDER BY id DESC LIMIT 10',
    );
    return { notes: rows };
  }
}
